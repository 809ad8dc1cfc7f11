//! The connection loop: HTTP/1.1 and HTTP/2 on one port (cleartext HTTP/2 by prior
//! knowledge; over TLS by ALPN), TLS with rustls from PEM files, slow clients cut off
//! (`read_timeout` for the TLS handshake and the request headers), and a graceful stop: no
//! new connection is taken, requests in flight are answered, idle connections close.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use crate::error::{Error, Result};

/// Binds `addr` (so a taken port fails at start).
///
/// # Errors
/// [`Error::Io`] naming the address.
pub(crate) async fn bind(addr: SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| Error::Io(std::io::Error::new(e.kind(), format!("server.listen {addr}: {e}"))))
}

/// A TLS acceptor from a PEM certificate chain and private key, offering HTTP/2 and HTTP/1.1.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the file that does not read or hold what it should.
pub(crate) fn tls_acceptor(cert: &str, key: &str) -> Result<TlsAcceptor> {
    tls_acceptor_for("server", cert, key, vec![b"h2".to_vec(), b"http/1.1".to_vec()])
}

/// A TLS acceptor offering `alpn` (none: no ALPN), its errors named under `section`.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the file that does not read or hold what it should.
pub(crate) fn tls_acceptor_for(section: &str, cert: &str, key: &str, alpn: Vec<Vec<u8>>) -> Result<TlsAcceptor> {
    tls_acceptor_verifying(section, cert, key, alpn, None)
}

/// [`tls_acceptor_for`] that also asks clients for a certificate when `client_ca` (PEM CA
/// certificates) is set: one they sign is verified and kept for the connection; a client
/// without one may still connect (and authenticate otherwise); one that does not verify is
/// refused in the handshake.
///
/// # Errors
/// As [`tls_acceptor_for`], and `<section>.tls_client_ca` for a CA file that does not read.
pub(crate) fn tls_acceptor_verifying(
    section: &str,
    cert: &str,
    key: &str,
    alpn: Vec<Vec<u8>>,
    client_ca: Option<&str>,
) -> Result<TlsAcceptor> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let bad = |what: &str, e: &dyn std::fmt::Display| Error::InvalidArgument(format!("{section}.{what}: {e}"));
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad("tls_cert", &format!("{cert}: {e}")))?
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| bad("tls_cert", &format!("{cert}: {e}")))?;
    if certs.is_empty() {
        return Err(bad("tls_cert", &format!("{cert} holds no certificate")));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| bad("tls_key", &format!("{key}: {e}")))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("tls_cert", &e))?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_file_iter(ca).map_err(|e| bad("tls_client_ca", &format!("{ca}: {e}")))? {
                let c = c.map_err(|e| bad("tls_client_ca", &format!("{ca}: {e}")))?;
                roots.add(c).map_err(|e| bad("tls_client_ca", &format!("{ca}: {e}")))?;
            }
            if roots.is_empty() {
                return Err(bad("tls_client_ca", &format!("{ca} holds no certificate")));
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| bad("tls_client_ca", &e))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(certs, key).map_err(|e| bad("tls_key", &e))?;
    config.alpn_protocols = alpn;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Serves `app` on `listener` until `stop` turns true, then drains for up to `grace`.
pub(crate) fn spawn(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    app: Router,
    read_timeout: Duration,
    grace: Duration,
    mut stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    let mut builder = Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(read_timeout).keep_alive(true);
    builder.http2().timer(TokioTimer::new()).keep_alive_interval(Some(Duration::from_secs(30)));
    tokio::spawn(async move {
        let graceful = GracefulShutdown::new();
        loop {
            let (tcp, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of file descriptors and the like: wait, do not spin.
                        tracing::warn!(error = %e, "push.accept_failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
                () = super::stopped(&mut stop) => break,
            };
            let _ = tcp.set_nodelay(true);
            let service = TowerToHyperService::new(app.clone());
            let (builder, watcher, tls) = (builder.clone(), graceful.watcher(), tls.clone());
            tokio::spawn(async move {
                let served = match tls {
                    None => {
                        let conn = builder.serve_connection_with_upgrades(TokioIo::new(tcp), service);
                        watcher.watch(conn.into_owned()).await
                    }
                    Some(acceptor) => match tokio::time::timeout(read_timeout, acceptor.accept(tcp)).await {
                        Ok(Ok(stream)) => {
                            let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                            watcher.watch(conn.into_owned()).await
                        }
                        Ok(Err(e)) => {
                            tracing::debug!(%peer, error = %e, "push.tls_handshake_failed");
                            return;
                        }
                        Err(_) => {
                            tracing::debug!(%peer, "push.tls_handshake_timed_out");
                            return;
                        }
                    },
                };
                if let Err(e) = served {
                    tracing::debug!(%peer, error = %e, "push.connection_ended");
                }
            });
        }
        drop(listener);
        tokio::select! {
            () = graceful.shutdown() => {}
            () = tokio::time::sleep(grace) => tracing::warn!("push.drain_timed_out: connections still open were closed"),
        }
    })
}
