//! Hides passwords in URLs (`scheme://user:PASSWORD@`, `?password=…`, any query parameter
//! naming a pass, secret, key or token) in any text. Pure string work, no configuration:
//! a leaf that configuration, tools and the redactor all use.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// `scheme://user:PASSWORD@`.
static URL_USERINFO: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\b([a-z][a-z0-9+.\-]*://[^/\s:@]*:)([^@\s/]+)@").ok());
/// `?name=VALUE` / `&name=VALUE` where the name is a password-like word.
static URL_QUERY_SECRET: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)([?&][^=&\s#]*(?:pass|secret|key|token)[^=&\s#]*=)([^&\s#]+)").ok());

/// Hides URL passwords (userinfo and password-like query parameters) in any text.
pub(crate) fn scrub_urls(text: &str) -> Cow<'_, str> {
    // Each pattern is compiled only for a text that could hold it (most never do).
    let userinfo = text.contains("://") && text.contains('@');
    let query = text.contains('=') && (text.contains('?') || text.contains('&'));
    let mut out = Cow::Borrowed(text);
    if userinfo
        && let Some(re) = URL_USERINFO.as_ref()
        && re.is_match(&out)
    {
        out = Cow::Owned(re.replace_all(&out, "${1}redacted@").into_owned());
    }
    if query
        && let Some(re) = URL_QUERY_SECRET.as_ref()
        && re.is_match(&out)
    {
        out = Cow::Owned(re.replace_all(&out, "${1}redacted").into_owned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::scrub_urls;

    #[test]
    fn passwords_in_urls_are_hidden_and_other_text_is_borrowed() {
        assert_eq!(
            scrub_urls("postgres://me:hunter22@db/x and https://h/p?a=1&api_key=zz9#f"),
            "postgres://me:redacted@db/x and https://h/p?a=1&api_key=redacted#f"
        );
        assert!(matches!(
            scrub_urls("a = b, see https://h/p?page=2"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
