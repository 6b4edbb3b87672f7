//! What every answer goes through before a provider reads it as its own: credentials and
//! the conversation never follow a redirect (the HTTP client follows none; a 3xx becomes
//! an error naming where the server wanted to send them), and a success that is an HTML
//! page (a proxy, a login portal, a wrong base URL) is an error saying what arrived. Knows
//! no wire format.

use std::time::Duration;

use reqwest::Response;

use super::ProviderError;
use super::http::read_capped;

/// What every answer goes through before a provider reads it: a redirect becomes an error
/// naming where the server wanted the request to go, and a success that is an HTML page
/// an error saying what arrived (status, content type, its first bytes, cleaned).
pub async fn screen(resp: Response, idle: Duration) -> Result<Response, ProviderError> {
    let status = resp.status();
    if status.is_redirection() {
        let location = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let location = match location {
            Some(l) => {
                let absolute = resp.url().join(&l).map(|u| u.to_string()).unwrap_or(l);
                crate::text::visible(&crate::config::redact_url(&absolute)).into_owned()
            }
            None => "an unnamed place (no Location header)".to_string(),
        };
        return Err(ProviderError::Redirected {
            status: status.as_u16(),
            location,
        });
    }
    let content_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string())
        .unwrap_or_default();
    if status.is_success() && content_type.to_ascii_lowercase().starts_with("text/html") {
        let body = read_capped(resp, 512, idle).await;
        let start: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
        let start = crate::text::shorten(&start, 200).to_string();
        return Err(ProviderError::NotApi {
            status: status.as_u16(),
            content_type: crate::text::visible(&content_type).into_owned(),
            start: crate::text::visible(&start).into_owned(),
        });
    }
    Ok(resp)
}
