//! TLS 1.3 with mutual authentication between participants (rustls, ring provider): each
//! side accepts only the certificate the roster names for the peer it expects, checked
//! against the session CA's chain, the peer's subject name and, when the roster pins one,
//! the certificate's SHA-256 fingerprint. A certificate of the same CA issued to anyone else
//! is refused during the handshake, before any protocol message.

use super::roster::{Member, fingerprint};
use crate::transport::Peer;
use kinsey_core::{Error, Result};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ParsedCertificate, WebPkiClientVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use std::path::Path;
use std::sync::Arc;

/// A participant's TLS material: the session CA, its certificate chain and its key.
#[derive(Debug)]
pub struct Identity {
    roots: Arc<RootCertStore>,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn pem_error(path: &Path, what: &str, e: impl std::fmt::Display) -> Error {
    Error::Config {
        path: path.to_path_buf(),
        msg: format!("cannot read {what} (PEM): {e}"),
    }
}

impl Identity {
    /// Load the CA certificate(s), the participant's certificate chain and its private key
    /// from PEM files.
    pub fn load(ca: &Path, cert: &Path, key: &Path) -> Result<Self> {
        let ca_certs = CertificateDer::pem_file_iter(ca)
            .map_err(|e| pem_error(ca, "the CA certificate", e))?
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| pem_error(ca, "the CA certificate", e))?;
        let chain = CertificateDer::pem_file_iter(cert)
            .map_err(|e| pem_error(cert, "the certificate", e))?
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| pem_error(cert, "the certificate", e))?;
        let key_der =
            PrivateKeyDer::from_pem_file(key).map_err(|e| pem_error(key, "the key", e))?;
        Self::from_der(ca_certs, chain, key_der).map_err(|msg| Error::Config {
            path: cert.to_path_buf(),
            msg,
        })
    }

    /// The same from PEM text (sessions generated in memory).
    pub fn from_pem(ca: &str, cert: &str, key: &str) -> std::result::Result<Self, String> {
        let ca =
            vec![CertificateDer::from_pem_slice(ca.as_bytes()).map_err(|e| format!("CA: {e}"))?];
        let chain = vec![
            CertificateDer::from_pem_slice(cert.as_bytes())
                .map_err(|e| format!("certificate: {e}"))?,
        ];
        let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).map_err(|e| format!("key: {e}"))?;
        Self::from_der(ca, chain, key)
    }

    /// The same from DER values (tests, generated sessions).
    pub fn from_der(
        ca: Vec<CertificateDer<'static>>,
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> std::result::Result<Self, String> {
        if ca.is_empty() {
            return Err("no CA certificate".into());
        }
        if chain.is_empty() {
            return Err("no certificate".into());
        }
        let mut roots = RootCertStore::empty();
        for c in ca {
            roots
                .add(c)
                .map_err(|e| format!("the CA certificate is not usable: {e}"))?;
        }
        Ok(Self {
            roots: Arc::new(roots),
            chain,
            key,
        })
    }

    /// The fingerprint of this participant's own certificate.
    pub fn fingerprint(&self) -> String {
        self.chain
            .first()
            .map_or_else(String::new, |c| fingerprint(c))
    }

    /// The client side, for dialing `peer`: accepts only `peer`'s roster certificate.
    pub(crate) fn client(&self, peer: &Member) -> Result<Arc<rustls::ClientConfig>> {
        let inner = WebPkiServerVerifier::builder_with_provider(self.roots.clone(), provider())
            .build()
            .map_err(|e| tls_setup(format!("server verifier: {e}")))?;
        let verifier = Arc::new(PinnedServer {
            inner,
            pin: peer.fingerprint.clone(),
        });
        let cfg = rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| tls_setup(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_client_auth_cert(self.chain.clone(), self.key.clone_key())
            .map_err(|e| tls_setup(format!("own certificate and key: {e}")))?;
        Ok(Arc::new(cfg))
    }

    /// The server side: accepts only the certificates of `dialers` (the participants that
    /// dial this one).
    pub(crate) fn server(&self, dialers: Vec<(Peer, Member)>) -> Result<Arc<rustls::ServerConfig>> {
        let inner = WebPkiClientVerifier::builder_with_provider(self.roots.clone(), provider())
            .build()
            .map_err(|e| tls_setup(format!("client verifier: {e}")))?;
        let verifier = Arc::new(RosterClients { inner, dialers });
        let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| tls_setup(e.to_string()))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(self.chain.clone(), self.key.clone_key())
            .map_err(|e| tls_setup(format!("own certificate and key: {e}")))?;
        // No resumption: every connection authenticates in full.
        cfg.send_tls13_tickets = 0;
        Ok(Arc::new(cfg))
    }
}

fn tls_setup(msg: String) -> Error {
    Error::param("tls", msg)
}

/// Whether `cert` is the one the roster names for `m`: its subject name matches (the chain
/// was checked by the caller) and, when pinned, its fingerprint.
pub(crate) fn names(m: &Member, cert: &CertificateDer<'_>) -> bool {
    let Ok(name) = ServerName::try_from(m.subject.as_str()) else {
        return false;
    };
    let Ok(parsed) = ParsedCertificate::try_from(cert) else {
        return false;
    };
    rustls::client::verify_server_name(&parsed, &name).is_ok()
        && m.fingerprint
            .as_ref()
            .is_none_or(|f| *f == fingerprint(cert))
}

fn not_in_roster() -> rustls::Error {
    rustls::Error::InvalidCertificate(rustls::CertificateError::ApplicationVerificationFailure)
}

#[derive(Debug)]
struct PinnedServer {
    inner: Arc<WebPkiServerVerifier>,
    pin: Option<String>,
}

impl ServerCertVerifier for PinnedServer {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        self.inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)?;
        match &self.pin {
            Some(p) if *p != fingerprint(end_entity) => Err(not_in_roster()),
            _ => Ok(ServerCertVerified::assertion()),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[derive(Debug)]
struct RosterClients {
    inner: Arc<dyn ClientCertVerifier>,
    dialers: Vec<(Peer, Member)>,
}

impl ClientCertVerifier for RosterClients {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> std::result::Result<ClientCertVerified, rustls::Error> {
        self.inner
            .verify_client_cert(end_entity, intermediates, now)?;
        if self.dialers.iter().any(|(_, m)| names(m, end_entity)) {
            Ok(ClientCertVerified::assertion())
        } else {
            Err(not_in_roster())
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
