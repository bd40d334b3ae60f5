//! The VALUE of `record add|delete`: shell words joined into one presentation-format value.
//!
//! VALUE takes every word after TYPE (so `MX 10 mail` and SPF's `-all` need no quoting), which
//! means clap also swallows options written after it. Those are picked out here: `--ttl`,
//! `--json`, `--server`, `--token`, `--data-dir`. A `--` word makes the rest literal.

use std::path::PathBuf;

use crate::error::Failure;

/// Options found among the VALUE words.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct TrailingOptions {
    pub ttl: Option<u32>,
    pub json: bool,
    pub server: Option<String>,
    pub token: Option<String>,
    pub data_dir: Option<PathBuf>,
}

/// Splits VALUE words into the value's words and trailing options. The first word is always
/// part of the value: clap has already parsed any option there, so it is a literal (e.g. the
/// `--x` of `TXT -- --x`).
pub(crate) fn split_trailing(words: &[String]) -> Result<(Vec<String>, TrailingOptions), Failure> {
    let mut value = Vec::new();
    let mut options = TrailingOptions::default();
    let mut iter = words.iter();
    if let Some(first) = iter.next() {
        value.push(first.clone());
    }
    while let Some(word) = iter.next() {
        if word == "--" {
            value.extend(iter.by_ref().cloned());
            break;
        }
        let Some(option) = word.strip_prefix("--") else {
            value.push(word.clone());
            continue;
        };
        let (name, inline) = match option.split_once('=') {
            Some((name, arg)) => (name, Some(arg.to_string())),
            None => (option, None),
        };
        if name == "json" && inline.is_none() {
            options.json = true;
            continue;
        }
        if !matches!(name, "ttl" | "server" | "token" | "data-dir") {
            return Err(Failure::usage(format!(
                "unexpected option {word} after VALUE (write `-- {word}` to make it part of VALUE)"
            )));
        }
        let arg = match inline.or_else(|| iter.next().cloned()) {
            Some(arg) => arg,
            None => return Err(Failure::usage(format!("--{name} needs a value"))),
        };
        match name {
            "ttl" => {
                let ttl = arg
                    .parse()
                    .map_err(|_| Failure::usage(format!("invalid --ttl {arg:?}: not a number")))?;
                options.ttl = Some(ttl);
            }
            "server" => options.server = Some(arg),
            "token" => options.token = Some(arg),
            _ => options.data_dir = Some(PathBuf::from(arg)),
        }
    }
    Ok((value, options))
}

/// Joins the words with single spaces. A TXT (or SPF) value written without any double quotes
/// is one text: it is quoted, and split into strings of at most 255 bytes, so that
/// `TXT v=spf1 -all` keeps its space and `; p=…` of DKIM is not read as a comment.
pub(crate) fn join(rtype: &str, words: &[String]) -> String {
    let joined = words.join(" ");
    let is_text = rtype.eq_ignore_ascii_case("TXT") || rtype.eq_ignore_ascii_case("SPF");
    if !is_text || joined.contains('"') || joined.starts_with("\\#") {
        return joined;
    }
    split_strings(&joined)
        .iter()
        .map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Cuts text into pieces of at most 255 wire bytes, never inside an escape (`\DDD`, `\X`).
fn split_strings(text: &str) -> Vec<&str> {
    const MAX: usize = 255;
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut wire = 0;
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        // One unit: a character, or an escape with what it escapes.
        let bytes = if c != '\\' {
            c.len_utf8()
        } else if text[at + 1..]
            .bytes()
            .take(3)
            .filter(u8::is_ascii_digit)
            .count()
            == 3
        {
            for _ in 0..3 {
                chars.next();
            }
            1
        } else {
            chars.next().map_or(1, |(_, escaped)| escaped.len_utf8())
        };
        if wire + bytes > MAX {
            pieces.push(&text[start..at]);
            start = at;
            wire = 0;
        }
        wire += bytes;
    }
    pieces.push(&text[start..]);
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(String::from).collect()
    }

    #[test]
    fn joins_with_single_spaces() {
        assert_eq!(join("MX", &words("10 mail")), "10 mail");
        assert_eq!(join("A", &words("192.0.2.1")), "192.0.2.1");
        assert_eq!(
            join("CAA", &words("0 issue \"ca.example\"")),
            "0 issue \"ca.example\""
        );
    }

    #[test]
    fn text_without_quotes_becomes_one_string() {
        assert_eq!(join("TXT", &words("v=spf1 -all")), "\"v=spf1 -all\"");
        assert_eq!(join("txt", &["a b".to_string()]), "\"a b\"");
        assert_eq!(join("TXT", &words("\"a\" \"b\"")), "\"a\" \"b\"");
        assert_eq!(join("TXT", &words("\\# 2 6869")), "\\# 2 6869");
    }

    #[test]
    fn long_text_is_split_at_255_bytes_outside_escapes() {
        let long = "x".repeat(300);
        assert_eq!(
            join("TXT", &[long]),
            format!("\"{}\" \"{}\"", "x".repeat(255), "x".repeat(45))
        );
        // 254 plain bytes, then an escape that must not be cut.
        let text = format!("{}\\059\\;y", "x".repeat(254));
        assert_eq!(
            split_strings(&text),
            vec![format!("{}\\059", "x".repeat(254)).as_str(), "\\;y"]
        );
    }

    #[test]
    fn trailing_options_are_picked_out() {
        let (value, options) =
            split_trailing(&words("10 mail --ttl 60 --json --token=t")).expect("split");
        assert_eq!(value, words("10 mail"));
        assert_eq!(
            options,
            TrailingOptions {
                ttl: Some(60),
                json: true,
                token: Some("t".into()),
                ..Default::default()
            }
        );
    }

    #[test]
    fn literal_words_that_look_like_options() {
        let (value, options) = split_trailing(&words("--x a -all -- --ttl 5")).expect("split");
        assert_eq!(value, words("--x a -all --ttl 5"));
        assert_eq!(options, TrailingOptions::default());
    }

    #[test]
    fn bad_trailing_options_are_usage_errors() {
        for bad in ["a --tll 5", "a --ttl", "a --ttl x"] {
            let err = split_trailing(&words(bad)).expect_err(bad);
            assert_eq!(err.exit_code(), 2, "{bad}");
        }
    }
}
