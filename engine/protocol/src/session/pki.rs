//! A private session CA and one certificate per participant (rcgen, ECDSA P-256), for trials
//! on one machine (`kinsey session init`) and tests. Real deployments bring their own PEM
//! files; nothing here is needed then.

use super::roster::fingerprint;
use kinsey_core::{Error, Result};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// A generated CA.
#[derive(Debug)]
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A generated participant certificate and key (PEM), and its fingerprint.
#[derive(Debug, Clone)]
pub struct Issued {
    /// The certificate (PEM).
    pub cert_pem: String,
    /// The private key (PKCS#8 PEM).
    pub key_pem: String,
    /// `sha256:...` of the certificate's DER.
    pub fingerprint: String,
}

fn gen_err(e: rcgen::Error) -> Error {
    Error::param("tls", format!("certificate generation failed: {e}"))
}

impl TestCa {
    /// A fresh CA named `name` (key from the OS).
    pub fn new(name: &str) -> Result<Self> {
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(gen_err)?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().map_err(gen_err)?;
        Ok(Self {
            issuer: CertifiedIssuer::self_signed(params, key).map_err(gen_err)?,
        })
    }

    /// The CA certificate (PEM).
    pub fn cert_pem(&self) -> String {
        self.issuer.pem()
    }

    /// A certificate for `subject` (a DNS name), usable as TLS client and server.
    pub fn issue(&self, subject: &str) -> Result<Issued> {
        let mut params = CertificateParams::new(vec![subject.to_string()]).map_err(gen_err)?;
        params.distinguished_name.push(DnType::CommonName, subject);
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let key = KeyPair::generate().map_err(gen_err)?;
        let cert = params.signed_by(&key, &self.issuer).map_err(gen_err)?;
        Ok(Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            fingerprint: fingerprint(cert.der()),
        })
    }
}
