//! YAML front matter atop a Markdown file (custom commands, skills' `SKILL.md`, agent
//! types): the text between a first line `---` and the next line `---`, read with
//! `serde_yaml_ng` into the caller's type, and the names it may give. Pure; reads no
//! file.

use serde::de::DeserializeOwned;

/// `(front matter, body)`: the front matter is between a first line `---` and the next
/// line `---` (a leading byte-order mark is skipped); `None` when there is none.
pub(crate) fn split(text: &str) -> (Option<&str>, &str) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (None, text);
    };
    let mut pos = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return (Some(&rest[..pos]), &rest[pos + line.len()..]);
        }
        pos += line.len();
    }
    (None, text)
}

/// The front matter read as `T` (`None` when the file has none or it is empty) and the
/// body; `Err` says why the YAML is not a `T`.
pub(crate) fn parse<T: DeserializeOwned>(text: &str) -> Result<(Option<T>, &str), String> {
    let (front, body) = split(text);
    match front {
        Some(yaml) if !yaml.trim().is_empty() => serde_yaml_ng::from_str(yaml)
            .map(|v| (Some(v), body))
            .map_err(|e| format!("its front matter is not valid: {e}")),
        _ => Ok((None, body)),
    }
}

/// Whether `b` may be part of a name given in front matter (a skill's, an agent
/// type's): an ASCII letter or digit, `-` or `_`.
pub(crate) fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// Whether `name` is such a name: 1 to 64 of those bytes.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(is_name_byte)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn front_matter_is_between_the_first_two_rule_lines() {
        assert_eq!(split("---\na: 1\n---\nbody\n"), (Some("a: 1\n"), "body\n"));
        assert_eq!(split("\u{feff}---\r\na: 1\r\n---\r\nb"), (Some("a: 1\r\n"), "b"));
        assert_eq!(split("no front\n---\n"), (None, "no front\n---\n"));
        assert_eq!(split("---\nnever closed\n"), (None, "---\nnever closed\n"));
        #[derive(serde::Deserialize, Debug)]
        struct F {
            a: u8,
        }
        let (f, body) = parse::<F>("---\na: 1\n---\nbody").unwrap();
        assert_eq!((f.map(|f| f.a), body), (Some(1), "body"));
        assert!(parse::<F>("---\na: [\n---\n").unwrap_err().contains("not valid"));
        assert!(parse::<F>("just text").unwrap().0.is_none());
    }
}
