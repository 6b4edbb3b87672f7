//! How an image is written into a request body: a `data:` URL (Chat Completions,
//! Responses) serialised straight from the borrowed base64 text, never copied into a
//! second string. Knows no wire format's shapes and reads nothing.

use serde::{Serialize, Serializer};

/// `data:{mime};base64,{data}` as one JSON string, written piece by piece.
#[derive(Clone, Copy, Debug)]
pub struct DataUrl<'a> {
    pub mime: &'a str,
    pub data: &'a str,
}

impl std::fmt::Display for DataUrl<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "data:{};base64,", self.mime)?;
        f.write_str(self.data)
    }
}

impl Serialize for DataUrl<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_data_url_is_one_json_string() {
        let url = DataUrl {
            mime: "image/png",
            data: "iVBORw0KGgo=",
        };
        assert_eq!(
            serde_json::to_string(&url).unwrap(),
            "\"data:image/png;base64,iVBORw0KGgo=\""
        );
    }
}
