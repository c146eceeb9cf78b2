//! `kinsey keys`: Paillier keys and ciphertexts in python-paillier's formats.

use clap::Subcommand;
use kinsey_core::Result;
use std::path::PathBuf;

/// Paillier keys and ciphertexts in python-paillier's formats.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[command(subcommand)]
    which: KeysCmd,
}

/// Runs the chosen key operation.
pub(crate) fn run(a: Args) -> Result<()> {
    keys(a.which)
}

#[derive(Subcommand, Debug)]
enum KeysCmd {
    /// A new Paillier key pair: OUT/private.json and OUT/public.json (pheutil's JWK format,
    /// with kinsey's h_s and the primes as extra members python-paillier ignores).
    Generate {
        #[arg(long)]
        /// Output directory for private.json and public.json.
        out: PathBuf,
        #[arg(long, default_value_t = 2048)]
        /// Modulus size in bits (2048, 3072 or 4096).
        bits: u32,
        #[arg(long)]
        /// Allow keys below 2048 bits (tests only: insecure).
        allow_insecure_test_keys: bool,
    },
    /// python-paillier's own files from a kinsey private key (kinsey's h_s dropped).
    Export {
        #[arg(long)]
        /// kinsey private key file.
        private: PathBuf,
        #[arg(long)]
        /// Output directory for python-paillier's files.
        out: PathBuf,
    },
    /// kinsey's files from a pheutil private key (primes recovered from lambda if needed).
    Import {
        #[arg(long)]
        /// python-paillier (pheutil) private key file.
        private: PathBuf,
        #[arg(long)]
        /// Output directory for kinsey's files.
        out: PathBuf,
    },
    /// Encrypt a number (kinsey's 2^-32 fixed point): prints a python-paillier EncryptedNumber.
    Encrypt {
        #[arg(long)]
        /// Public key file.
        public: PathBuf,
        #[arg(allow_hyphen_values = true)]
        /// The number to encrypt.
        value: f64,
        #[arg(long)]
        /// Accept keys below 2048 bits (tests only: insecure).
        allow_insecure_test_keys: bool,
    },
    /// Decrypt a python-paillier EncryptedNumber ({"v": ..., "e": ...}).
    Decrypt {
        #[arg(long)]
        /// Private key file.
        private: PathBuf,
        /// The EncryptedNumber file ({"v": ..., "e": ...}).
        number: PathBuf,
        #[arg(long)]
        /// Accept keys below 2048 bits (tests only: insecure).
        allow_insecure_test_keys: bool,
    },
}

#[cfg(not(feature = "paillier"))]
fn keys(_: KeysCmd) -> Result<()> {
    Err(kinsey_core::Error::param(
        "keys",
        "this build has no Paillier backend (cargo feature 'paillier')",
    ))
}

#[cfg(feature = "paillier")]
fn keys(which: KeysCmd) -> Result<()> {
    use crate::keyfiles;
    let mut rng = kinsey_dp::rng::os_crypto_rng();
    let wrote = |files: Vec<PathBuf>| {
        for f in files {
            println!("wrote {}", f.display());
        }
    };
    match which {
        KeysCmd::Generate {
            out,
            bits,
            allow_insecure_test_keys,
        } => wrote(keyfiles::generate(
            bits,
            allow_insecure_test_keys,
            &out,
            &mut rng,
        )?),
        KeysCmd::Export { private, out } => wrote(keyfiles::export(&private, &out, &mut rng)?),
        KeysCmd::Import { private, out } => wrote(keyfiles::import(&private, &out, &mut rng)?),
        KeysCmd::Encrypt {
            public,
            value,
            allow_insecure_test_keys,
        } => println!(
            "{}",
            keyfiles::encrypt(&public, value, allow_insecure_test_keys, &mut rng)?
        ),
        KeysCmd::Decrypt {
            private,
            number,
            allow_insecure_test_keys,
        } => println!(
            "{}",
            keyfiles::decrypt(&private, &number, allow_insecure_test_keys, &mut rng)?
        ),
    }
    Ok(())
}
