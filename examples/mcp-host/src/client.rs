//! The HTTP/1 client connection every outbound HTTP request of this crate (and `mcp-call`) makes:
//! over a TCP stream the caller opened, in clear or through rustls with a [`Tls`] setting (the
//! certificate checked against the host the URL names), hyper's connection driven by a task of
//! its own. [`ota`](crate::ota) posts the OTA check through it, [`oauth`](crate::oauth) fetches
//! an authorization server's keys.

use hyper::body::Body;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::tls::Tls;

/// An HTTP/1 connection over `tcp`: through TLS when `tls_host` names the host the URL names
/// (its certificate is checked against it with `tls`'s roots), else in clear. The connection
/// lives as long as the returned sender and any response body it is reading.
///
/// # Errors
/// An unusable TLS setting, a certificate refused (the error says why, [`crate::tls::explain`]),
/// the HTTP handshake failed.
pub async fn http1<B>(
    tcp: TcpStream,
    tls_host: Option<&str>,
    tls: &Tls,
) -> Result<SendRequest<B>, String>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let _ = tcp.set_nodelay(true);
    match tls_host {
        Some(host) => {
            let config = tls.client_config().map_err(|e| e.to_string())?;
            let name = crate::tls::server_name(host)?;
            let stream = tokio_rustls::TlsConnector::from(config)
                .connect(name, tcp)
                .await
                .map_err(|e| crate::tls::explain(&e).unwrap_or_else(|| format!("TLS: {e}")))?;
            handshake(stream).await
        }
        None => handshake(tcp).await,
    }
}

/// The HTTP/1 handshake over `io`, its connection driven by a task.
async fn handshake<S, B>(io: S) -> Result<SendRequest<B>, String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    tokio::spawn(conn);
    Ok(send)
}
