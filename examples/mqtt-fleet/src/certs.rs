//! Certificates for TLS tests, made at test time: a test CA, and server certificates it issues —
//! valid for a name, expired, or for another name — as PEM files in a folder of their own. The
//! broker's TLS listener ([`crate::Broker::start_tls`]) and the simulator's `wss://`, `mqtts://`
//! and `https://` tests use them; nothing here is trusted anywhere else.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    date_time_ymd,
};

/// When a certificate is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Validity {
    /// From 2020 to 4096: valid now.
    Now,
    /// From 2020 to 2021: expired.
    Expired,
}

/// A server certificate and its key, as PEM files.
#[derive(Debug, Clone)]
pub struct Issued {
    /// The certificate (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM, PKCS#8).
    pub key: PathBuf,
}

/// A certificate authority made for one test, with its certificate as a PEM file.
pub struct TestCa {
    params: CertificateParams,
    key: KeyPair,
    dir: PathBuf,
    /// The CA's certificate (PEM): what a client is given with `--ca-file`.
    pub pem: PathBuf,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa")
            .field("pem", &self.pem)
            .finish_non_exhaustive()
    }
}

static SEQ: AtomicU32 = AtomicU32::new(0);

impl TestCa {
    /// A new CA named `name`, its files in a new folder under the system's temporary folder.
    ///
    /// # Errors
    /// rcgen or the file system failed.
    pub fn new(name: &str) -> Result<TestCa, String> {
        let dir = std::env::temp_dir().join(format!(
            "test-ca-{}-{}-{name}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.not_before = date_time_ymd(2020, 1, 1);
        params.not_after = date_time_ymd(4096, 1, 1);
        let key = KeyPair::generate().map_err(|e| e.to_string())?;
        let cert = params.self_signed(&key).map_err(|e| e.to_string())?;
        let pem = dir.join("ca.pem");
        fs::write(&pem, cert.pem()).map_err(|e| e.to_string())?;
        Ok(TestCa {
            params,
            key,
            dir,
            pem,
        })
    }

    /// The folder of its files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Issues a server certificate for `names` (DNS names or IP addresses), valid as `validity`
    /// says, written as `<file>.pem` and `<file>.key` in the CA's folder.
    ///
    /// # Errors
    /// rcgen or the file system failed.
    pub fn issue(&self, file: &str, names: &[&str], validity: Validity) -> Result<Issued, String> {
        self.server(file, names, validity, true)
    }

    /// A server certificate for `names` that signs itself (no CA issued it), valid now, written
    /// as `<file>.pem` and `<file>.key` in the CA's folder: what a device must refuse as an
    /// unknown issuer.
    ///
    /// # Errors
    /// rcgen or the file system failed.
    pub fn self_signed(&self, file: &str, names: &[&str]) -> Result<Issued, String> {
        self.server(file, names, Validity::Now, false)
    }

    /// A server certificate for `names`, signed by this CA (`by_ca`) or by its own key.
    fn server(
        &self,
        file: &str,
        names: &[&str],
        validity: Validity,
        by_ca: bool,
    ) -> Result<Issued, String> {
        let names: Vec<String> = names.iter().map(|n| (*n).to_string()).collect();
        let mut params = CertificateParams::new(names.clone()).map_err(|e| e.to_string())?;
        if let Some(first) = names.first() {
            params
                .distinguished_name
                .push(DnType::CommonName, first.as_str());
        }
        let (from, until) = match validity {
            Validity::Now => (date_time_ymd(2020, 1, 1), date_time_ymd(4096, 1, 1)),
            Validity::Expired => (date_time_ymd(2020, 1, 1), date_time_ymd(2021, 1, 1)),
        };
        params.not_before = from;
        params.not_after = until;
        let key = KeyPair::generate().map_err(|e| e.to_string())?;
        let cert = if by_ca {
            let issuer = Issuer::from_params(&self.params, &self.key);
            params.signed_by(&key, &issuer)
        } else {
            params.self_signed(&key)
        }
        .map_err(|e| e.to_string())?;
        let issued = Issued {
            cert: self.dir.join(format!("{file}.pem")),
            key: self.dir.join(format!("{file}.key")),
        };
        fs::write(&issued.cert, cert.pem()).map_err(|e| e.to_string())?;
        fs::write(&issued.key, key.serialize_pem()).map_err(|e| e.to_string())?;
        Ok(issued)
    }
}

impl Drop for TestCa {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}
