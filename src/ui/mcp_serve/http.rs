//! `ikigai mcp serve --http ADDR`: the same server over Streamable HTTP (rmcp's service,
//! at `/mcp`), on a loopback address only, behind a bearer token: `IKIGAI_MCP_TOKEN` when
//! set, else one generated at start (printed to stderr with the URL, the one line this
//! prints). A request without the token, or with another, is answered 401 before rmcp
//! sees it; the Host header must name loopback (rmcp's DNS-rebinding check). Runs until
//! SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};

use super::{ServeError, Server};

/// The variable a fixed token is taken from.
pub const TOKEN_VAR: &str = "IKIGAI_MCP_TOKEN";

/// Why `addr` may not be served on: only loopback addresses.
pub fn check_addr(addr: &SocketAddr) -> Result<(), String> {
    if addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(format!(
            "--http serves on a loopback address only (127.0.0.1:PORT or [::1]:PORT), not {addr}"
        ))
    }
}

/// The token from `IKIGAI_MCP_TOKEN`, else a new random one (256 bits of the system's
/// random source, hex).
fn token() -> (String, bool) {
    match crate::environ::var(TOKEN_VAR).filter(|t| !t.trim().is_empty()) {
        Some(t) => (t.trim().to_string(), true),
        None => (
            format!(
                "{}{}",
                uuid::Uuid::new_v4().simple(),
                uuid::Uuid::new_v4().simple()
            ),
            false,
        ),
    }
}

/// Whether the request carries `Authorization: Bearer TOKEN`. Compared as digests, so
/// the time it takes says nothing about how much of the token was right.
fn authorized(req: &Request, want: &[u8; 32]) -> bool {
    let Some(given) = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    let got: [u8; 32] = Sha256::digest(given.trim().as_bytes()).into();
    got.iter().zip(want).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// Serves `server` on `addr` until a signal; the turns still running end first.
pub(super) async fn serve(server: Server, addr: SocketAddr) -> Result<(), ServeError> {
    check_addr(&addr).map_err(ServeError::Address)?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| ServeError::Connection(format!("cannot listen on {addr}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| ServeError::Connection(e.to_string()))?;
    let (token, fixed) = token();
    let want: Arc<[u8; 32]> = Arc::new(Sha256::digest(token.as_bytes()).into());
    let shown = if fixed {
        format!("the token in ${TOKEN_VAR}")
    } else {
        format!("token {token}")
    };
    eprintln!(
        "ikigai mcp serve: listening on http://{bound}/mcp ({shown}; send it as `Authorization: Bearer …`)"
    );
    let stop = tokio_util::sync::CancellationToken::new();
    let turns = server.turns.clone();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token()),
    );
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(move |req: Request, next: Next| {
            let want = want.clone();
            async move {
                if authorized(&req, &want) {
                    next.run(req).await
                } else {
                    unauthorized()
                }
            }
        }));
    let signalled = stop.clone();
    let served = axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            signal().await;
            signalled.cancel();
        })
        .await
        .map_err(|e| ServeError::Connection(e.to_string()));
    turns.close();
    turns.wait().await;
    served
}

fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "a bearer token is required (the one `ikigai mcp serve --http` printed, or $IKIGAI_MCP_TOKEN)\n",
    )
        .into_response()
}

/// SIGINT or SIGTERM.
async fn signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
    else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_is_served_and_only_the_exact_token_passes() {
        for ok in ["127.0.0.1:0", "127.0.0.9:80", "[::1]:8080"] {
            assert!(check_addr(&ok.parse().unwrap()).is_ok(), "{ok}");
        }
        for bad in ["0.0.0.0:80", "[::]:80", "192.168.1.2:80", "10.0.0.1:1"] {
            assert!(check_addr(&bad.parse().unwrap()).is_err(), "{bad}");
        }
        let want: [u8; 32] = Sha256::digest(b"s3cret").into();
        let req = |auth: Option<&str>| {
            let mut b = axum::http::Request::builder();
            if let Some(a) = auth {
                b = b.header(header::AUTHORIZATION, a);
            }
            b.body(axum::body::Body::empty()).unwrap()
        };
        assert!(authorized(&req(Some("Bearer s3cret")), &want));
        for bad in [
            None,
            Some("Bearer "),
            Some("Bearer s3cre"),
            Some("Bearer s3crett"),
            Some("bearer s3cret"),
            Some("Basic s3cret"),
            Some("s3cret"),
        ] {
            assert!(!authorized(&req(bad), &want), "{bad:?}");
        }
    }
}
