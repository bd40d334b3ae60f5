//! A JSON response body kept as the server sent it, so `--json` prints the API's own key order
//! (serde_json's `Value` would sort the keys).

use serde::de::{DeserializeOwned, IgnoredAny};

use crate::error::Failure;

pub(crate) struct Json(Vec<u8>);

impl Json {
    /// Checks that `bytes` is JSON; an empty body (204) is allowed.
    pub(crate) fn new(bytes: Vec<u8>) -> Result<Json, Failure> {
        let json = Json(bytes);
        if !json.is_empty() {
            serde_json::from_slice::<IgnoredAny>(&json.0)
                .map_err(|e| Failure::runtime(format!("the server sent invalid JSON: {e}")))?;
        }
        Ok(json)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.iter().all(u8::is_ascii_whitespace)
    }

    pub(crate) fn decode<T: DeserializeOwned>(&self) -> Result<T, Failure> {
        serde_json::from_slice(&self.0)
            .map_err(|e| Failure::runtime(format!("unexpected response from the server: {e}")))
    }

    /// Indented two spaces like `serde_json::to_string_pretty`, ending in a newline.
    pub(crate) fn pretty(&self) -> String {
        pretty(&String::from_utf8_lossy(&self.0))
    }
}

/// Re-indents valid JSON text: whitespace outside strings is dropped and put back.
fn pretty(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = text.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n("  ", depth));
    };
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            c if c.is_whitespace() => {}
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                // Empty containers stay on one line: `[]`, `{}`.
                if matches!(chars.peek(), Some('}' | ']')) {
                    if let Some(close) = chars.next() {
                        out.push(close);
                    }
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c => out.push(c),
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_keeps_key_order_and_matches_serde_layout() {
        let text = r#" {"id":1,"name":"a \"b\" , {x}","list":[],"obj":{},"nested":[{"z":null,"a":[1, 2]}]}"#;
        let expected = "{\n  \"id\": 1,\n  \"name\": \"a \\\"b\\\" , {x}\",\n  \"list\": [],\n  \
                        \"obj\": {},\n  \"nested\": [\n    {\n      \"z\": null,\n      \"a\": [\n        \
                        1,\n        2\n      ]\n    }\n  ]\n}\n";
        assert_eq!(pretty(text), expected);
        // Same layout as serde_json's, apart from key order.
        let sorted: serde_json::Value =
            serde_json::from_str(r#"{"a":[1,{"b":[]}]}"#).expect("json");
        let serde = serde_json::to_string_pretty(&sorted).expect("json") + "\n";
        assert_eq!(pretty(r#"{"a":[1,{"b":[]}]}"#), serde);
    }

    #[test]
    fn invalid_json_is_refused_and_empty_is_allowed() {
        assert!(Json::new(b"{nope".to_vec()).is_err());
        assert!(Json::new(b" \n".to_vec()).is_ok_and(|j| j.is_empty()));
        let json = Json::new(b"[1,2]".to_vec()).expect("valid");
        assert_eq!(json.decode::<Vec<u8>>().ok(), Some(vec![1, 2]));
    }
}
