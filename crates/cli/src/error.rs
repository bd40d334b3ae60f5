//! Why a client command failed, and how that is shown on stderr. Usage errors (the command
//! line or the local setup is wrong) exit 2; everything else (network, server, files) exits 1.

use api::ErrorBody;

#[derive(Debug)]
pub(crate) enum Failure {
    /// The user has to change the command line or the environment.
    Usage(String),
    /// The server answered with an error status.
    Api {
        status: u16,
        body: ErrorBody,
        /// An extra line of advice (e.g. where a rejected token came from).
        hint: Option<String>,
    },
    /// Network, file or protocol trouble.
    Runtime(anyhow::Error),
}

impl Failure {
    pub(crate) fn usage(message: impl Into<String>) -> Failure {
        Failure::Usage(message.into())
    }

    pub(crate) fn runtime(message: impl std::fmt::Display) -> Failure {
        Failure::Runtime(anyhow::anyhow!("{message}"))
    }

    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Failure::Usage(_) => 2,
            Failure::Api { .. } | Failure::Runtime(_) => 1,
        }
    }

    /// The lines for stderr, each ending in a newline.
    pub(crate) fn render(&self) -> String {
        match self {
            Failure::Usage(message) => format!("error: {message}\n"),
            Failure::Runtime(error) => format!("error: {error:#}\n"),
            Failure::Api { status, body, hint } => {
                let mut out = render_error_body(*status, body);
                if let Some(hint) = hint {
                    out.push_str(&format!("  hint: {hint}\n"));
                }
                out
            }
        }
    }
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Failure {
        Failure::Runtime(error)
    }
}

/// `error: <error>`, then one indented line per problem, so a rejected zone file lists every
/// bad line. The status is only shown when the server sent no message at all.
pub(crate) fn render_error_body(status: u16, body: &ErrorBody) -> String {
    let message = if body.error.trim().is_empty() {
        format!("HTTP {status}")
    } else {
        clean(&body.error)
    };
    let mut out = format!("error: {message}\n");
    if body.errors.is_empty()
        && let Some(field) = &body.field
    {
        out.push_str(&format!("  field: {}\n", clean(field)));
    }
    for problem in &body.errors {
        out.push_str(&format!(
            "  {}: {}\n",
            clean(&problem.field),
            clean(&problem.message)
        ));
    }
    out
}

/// Server text goes to a terminal: keep control characters from reaching it.
fn clean(text: &str) -> String {
    crate::table::escape_controls(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::FieldProblem;

    #[test]
    fn error_body_with_problems_lists_each() {
        let body = ErrorBody {
            error: "zone file has 2 errors".into(),
            field: None,
            errors: vec![
                FieldProblem {
                    field: "line 3".into(),
                    message: "bad address 1.2.3".into(),
                },
                FieldProblem {
                    field: "line 7".into(),
                    message: "unknown type FOO".into(),
                },
            ],
        };
        assert_eq!(
            render_error_body(422, &body),
            "error: zone file has 2 errors\n  line 3: bad address 1.2.3\n  line 7: unknown type FOO\n"
        );
    }

    #[test]
    fn error_body_with_field_only() {
        let body = ErrorBody {
            error: "ttl out of range".into(),
            field: Some("ttl".into()),
            errors: vec![],
        };
        assert_eq!(
            render_error_body(400, &body),
            "error: ttl out of range\n  field: ttl\n"
        );
    }

    #[test]
    fn empty_message_shows_status_and_controls_are_escaped() {
        let body = ErrorBody {
            error: String::new(),
            field: None,
            errors: vec![],
        };
        assert_eq!(render_error_body(500, &body), "error: HTTP 500\n");
        let body = ErrorBody {
            error: "bad\x1b[31m".into(),
            field: None,
            errors: vec![],
        };
        assert_eq!(render_error_body(400, &body), "error: bad\\027[31m\n");
    }

    #[test]
    fn hint_and_exit_codes() {
        let failure = Failure::Api {
            status: 401,
            body: ErrorBody {
                error: "invalid token".into(),
                field: None,
                errors: vec![],
            },
            hint: Some("the token came from DNZ_TOKEN".into()),
        };
        assert_eq!(
            failure.render(),
            "error: invalid token\n  hint: the token came from DNZ_TOKEN\n"
        );
        assert_eq!(failure.exit_code(), 1);
        assert_eq!(Failure::usage("x").exit_code(), 2);
        assert_eq!(Failure::runtime("x").exit_code(), 1);
    }
}
