//! A mosquitto broker for tests and benchmarks: started from a config file of its own on an
//! ephemeral loopback port (never as a system service), killed and restarted at will, stopped
//! when dropped.

use std::fs;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Who may connect, and what they may do.
#[derive(Debug, Clone, Copy)]
struct Auth<'a> {
    /// Accounts (name, password); none: anonymous clients, anything goes.
    users: &'a [(&'a str, &'a str)],
    /// An ACL file, with user names as client ids.
    acl: Option<&'a Path>,
}

impl Auth<'_> {
    const OPEN: Auth<'static> = Auth {
        users: &[],
        acl: None,
    };
}

/// A running (or killed) mosquitto.
#[derive(Debug)]
pub struct Broker {
    binary: PathBuf,
    dir: PathBuf,
    port: u16,
    /// The TLS listener's port, if it has one ([`Broker::start_tls`]).
    tls_port: Option<u16>,
    child: Option<Child>,
}

/// Where mosquitto is, installing the Debian package when it is missing and this process may
/// (`apt-get`, as root). `Err` says why there is none.
pub fn mosquitto() -> Result<PathBuf, String> {
    if let Some(p) = find() {
        return Ok(p);
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0"));
    if root {
        let quiet = |args: &[&str]| {
            Command::new("apt-get")
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if !quiet(&["install", "-y", "-qq", "mosquitto"]) {
            quiet(&["update", "-qq"]);
            quiet(&["install", "-y", "-qq", "mosquitto"]);
        }
        if let Some(p) = find() {
            return Ok(p);
        }
    }
    Err("mosquitto is not installed and could not be installed (apt-get install mosquitto)".into())
}

fn find() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
        .map(|d| d.join("mosquitto"))
        .find(|p| p.is_file())
}

/// A loopback port nobody listens on (bound and released: a tiny race, fine for tests).
fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

static SEQ: AtomicU32 = AtomicU32::new(0);

/// docs/SERVICES.md, whose mosquitto TLS listener the TLS broker runs.
const SERVICES: &str = include_str!("../../../docs/SERVICES.md");

/// The TLS listener block of docs/SERVICES.md as it is written there, but on `port` with the
/// files `cert` and `key`: what a reader copies is what the TLS tests run.
fn tls_listener(port: u16, cert: &Path, key: &Path) -> Result<String, String> {
    let head = "```text\n# mosquitto.conf";
    let block = SERVICES
        .split_once(head)
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(block, _)| format!("# mosquitto.conf{block}"))
        .ok_or("docs/SERVICES.md has no mosquitto.conf block")?;
    let swaps = [
        ("listener 8883 ", format!("listener {port} ")),
        (
            "certfile broker.crt",
            format!("certfile {}", cert.display()),
        ),
        ("keyfile broker.key", format!("keyfile {}", key.display())),
    ];
    swaps.iter().try_fold(block, |block, (from, to)| {
        if block.contains(from) {
            Ok(block.replace(from, to))
        } else {
            Err(format!(
                "docs/SERVICES.md's mosquitto.conf block has no `{from}`"
            ))
        }
    })
}

impl Broker {
    /// Starts mosquitto on a free loopback port and waits until it accepts connections.
    ///
    /// # Errors
    /// No mosquitto binary (see [`mosquitto`]), or it did not start.
    pub fn start() -> Result<Broker, String> {
        Self::start_as(None)
    }

    /// [`start`](Self::start), and a second listener on another loopback port that speaks TLS
    /// with `server`'s certificate and key (mosquitto's `certfile`/`keyfile`; see
    /// [`crate::certs`]): [`tls_url`](Self::tls_url).
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn start_tls(server: &crate::certs::Issued) -> Result<Broker, String> {
        Self::start_auth(Auth::OPEN, Some(server))
    }

    /// [`start_tls`](Self::start_tls) for a test, as [`for_test`](Self::for_test): its
    /// certificate issued for `localhost` by a fresh test CA named `ca_name`, returned with it
    /// (a client trusts the CA's `pem`).
    ///
    /// # Panics
    /// No broker (or no CA) while the environment variable `CI` is set.
    pub fn for_test_tls(ca_name: &str) -> Option<(Broker, crate::certs::TestCa)> {
        let ca = crate::certs::TestCa::new(ca_name);
        let started = ca.and_then(|ca| {
            let server = ca.issue("broker", &["localhost"], crate::certs::Validity::Now)?;
            Ok((Self::start_tls(&server)?, ca))
        });
        or_skip(started)
    }

    /// [`start`](Self::start) with a password file: only `user` with `password` may connect;
    /// anonymous clients and other passwords are refused (CONNACK "not authorized").
    ///
    /// # Errors
    /// No mosquitto or mosquitto_passwd binary (both come with the Debian package), or it did
    /// not start.
    pub fn start_with_password(user: &str, password: &str) -> Result<Broker, String> {
        Self::start_as(Some((user, password)))
    }

    fn start_as(auth: Option<(&str, &str)>) -> Result<Broker, String> {
        let users = auth.map(|u| [u]);
        let auth = Auth {
            users: users.as_ref().map_or(&[], |u| u.as_slice()),
            acl: None,
        };
        Self::start_auth(auth, None)
    }

    /// [`start`](Self::start) with accounts and an ACL file (mosquitto's `acl_file`): only the
    /// `users` (name, password) may connect, each with its user name as client id
    /// (`use_username_as_clientid`), and each may publish and receive only what `acl` grants.
    ///
    /// # Errors
    /// As [`start_with_password`](Self::start_with_password).
    pub fn start_with_acl(users: &[(&str, &str)], acl: &Path) -> Result<Broker, String> {
        let auth = Auth {
            users,
            acl: Some(acl),
        };
        Self::start_auth(auth, None)
    }

    /// [`start_with_acl`](Self::start_with_acl) for a test, as [`for_test`](Self::for_test).
    ///
    /// # Panics
    /// No broker while the environment variable `CI` is set.
    pub fn for_test_with_acl(users: &[(&str, &str)], acl: &Path) -> Option<Broker> {
        or_skip(Self::start_with_acl(users, acl))
    }

    fn start_auth(auth: Auth<'_>, tls: Option<&crate::certs::Issued>) -> Result<Broker, String> {
        let binary = mosquitto()?;
        // Another process may take the port between its release and mosquitto's bind: try again
        // on a new one.
        let mut last = String::new();
        for _ in 0..3 {
            match Self::start_on(binary.clone(), auth, tls) {
                Ok(b) => return Ok(b),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// [`start`](Self::start) for a test: `None` (and a `SKIPPED` line on stderr) when mosquitto
    /// cannot be had on this machine, so `cargo test` works without it; but with `CI` set (CI
    /// installs mosquitto first, `.ci/mqtt.sh install`) no broker is a failure, not a skip that
    /// would pass without testing anything.
    ///
    /// # Panics
    /// No broker while the environment variable `CI` is set.
    pub fn for_test() -> Option<Broker> {
        Self::for_test_as(None)
    }

    /// [`for_test`](Self::for_test) with [`start_with_password`](Self::start_with_password).
    ///
    /// # Panics
    /// No broker while the environment variable `CI` is set.
    pub fn for_test_with_password(user: &str, password: &str) -> Option<Broker> {
        Self::for_test_as(Some((user, password)))
    }

    fn for_test_as(auth: Option<(&str, &str)>) -> Option<Broker> {
        or_skip(Self::start_as(auth))
    }

    fn start_on(
        binary: PathBuf,
        auth: Auth<'_>,
        tls: Option<&crate::certs::Issued>,
    ) -> Result<Broker, String> {
        let port = free_port().map_err(|e| e.to_string())?;
        let tls_port = match tls {
            Some(_) => Some(free_port().map_err(|e| e.to_string())?),
            None => None,
        };
        let dir = std::env::temp_dir().join(format!(
            "mqtt-fleet-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        // No persistence: a restarted broker has forgotten every retained presence, and the
        // devices must announce themselves again. Queues sized for a fleet benchmark.
        let access = if auth.users.is_empty() {
            "allow_anonymous true\n".to_string()
        } else {
            let file = dir.join("passwd");
            let passwd = binary.with_file_name("mosquitto_passwd");
            let passwd = if passwd.is_file() {
                passwd
            } else {
                "mosquitto_passwd".into()
            };
            for (i, (user, password)) in auth.users.iter().enumerate() {
                let create: &[&str] = if i == 0 { &["-b", "-c"] } else { &["-b"] };
                let made = Command::new(&passwd)
                    .args(create)
                    .arg(&file)
                    .args([user, password])
                    .stdin(Stdio::null())
                    .output()
                    .map_err(|e| format!("{}: {e}", passwd.display()))?;
                if !made.status.success() {
                    return Err(format!(
                        "mosquitto_passwd: {}",
                        String::from_utf8_lossy(&made.stderr)
                    ));
                }
            }
            let mut access = format!("allow_anonymous false\npassword_file {}\n", file.display());
            if let Some(acl) = auth.acl {
                access.push_str(&format!(
                    "use_username_as_clientid true\nacl_file {}\n",
                    acl.display()
                ));
            }
            access
        };
        let mut conf = format!(
            "listener {port} 127.0.0.1\n{access}persistence false\n\
             set_tcp_nodelay true\nmax_queued_messages 100000\n\
             log_dest stdout\nlog_type error\nlog_type warning\n"
        );
        if let (Some(tls), Some(tls_port)) = (tls, tls_port) {
            conf.push_str(&tls_listener(tls_port, &tls.cert, &tls.key)?);
        }
        fs::write(dir.join("mosquitto.conf"), conf).map_err(|e| e.to_string())?;
        let mut b = Broker {
            binary,
            dir,
            port,
            tls_port,
            child: None,
        };
        b.restart()?;
        Ok(b)
    }

    /// `mqtt://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("mqtt://127.0.0.1:{}", self.port)
    }

    /// `mqtts://localhost:PORT`: the TLS listener of [`start_tls`](Self::start_tls) (its
    /// certificate names `localhost`), if it has one.
    pub fn tls_url(&self) -> Option<String> {
        self.tls_port.map(|p| format!("mqtts://localhost:{p}"))
    }

    /// The port it listens on (the same after a restart).
    pub const fn port(&self) -> u16 {
        self.port
    }

    /// The folder with its config and log.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Kills it (SIGKILL: no will messages, no goodbye) and waits for it to exit.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port (after [`kill`](Self::kill)), and waits until it
    /// accepts connections.
    ///
    /// # Errors
    /// It did not start within 10 s.
    pub fn restart(&mut self) -> Result<(), String> {
        self.kill();
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("mosquitto.log"))
            .map_err(|e| e.to_string())?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(&self.binary)
            .arg("-c")
            .arg(self.dir.join("mosquitto.conf"))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("start {}: {e}", self.binary.display()))?;
        self.child = Some(child);
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let start = Instant::now();
        let tls = self.tls_port.map(|p| SocketAddr::from(([127, 0, 0, 1], p)));
        while start.elapsed() < Duration::from_secs(10) {
            let up =
                |a: &SocketAddr| TcpStream::connect_timeout(a, Duration::from_millis(200)).is_ok();
            if up(&addr) && tls.as_ref().is_none_or(up) {
                return Ok(());
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                let log = fs::read_to_string(self.dir.join("mosquitto.log")).unwrap_or_default();
                return Err(format!("mosquitto exited ({status}): {log}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!(
            "mosquitto did not listen on port {} within 10 s",
            self.port
        ))
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.kill();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// A started broker, or — no mosquitto on this machine — `None` and a `SKIPPED` line on stderr;
/// with `CI` set, a failure instead (CI installs mosquitto: a skip would pass without testing).
#[allow(clippy::panic, reason = "a test helper: failing the test is its job")]
fn or_skip<T>(started: Result<T, String>) -> Option<T> {
    match started {
        Ok(b) => Some(b),
        Err(e) if std::env::var_os("CI").is_some() => panic!("no MQTT broker in CI: {e}"),
        Err(e) => {
            eprintln!("SKIPPED: no MQTT broker: {e}");
            None
        }
    }
}
