//! Reading a password from stdin: with the terminal's echo off when stdin is a terminal (via
//! `stty`, which needs no extra dependency), else the first line of piped input.

use std::io::{BufRead, IsTerminal, Write};
use std::process::{Command, Stdio};

use crate::error::Failure;

/// Asks for a password; `confirm` asks twice (when creating one) if a person is typing.
pub(crate) fn read_password(prompt: &str, confirm: bool) -> Result<String, Failure> {
    let interactive = std::io::stdin().is_terminal();
    let first = read_line(prompt, interactive)?;
    if confirm && interactive && read_line("Repeat password: ", true)? != first {
        return Err(Failure::usage("the passwords do not match"));
    }
    Ok(first)
}

fn read_line(prompt: &str, interactive: bool) -> Result<String, Failure> {
    let mut line = String::new();
    let read = {
        let _echo = interactive.then(|| {
            eprint!("{prompt}");
            let _ = std::io::stderr().flush();
            EchoOff::new()
        });
        std::io::stdin().lock().read_line(&mut line)
    };
    if interactive {
        // The newline typed was not echoed.
        eprintln!();
    }
    let read = read.map_err(|e| Failure::runtime(format!("reading the password: {e}")))?;
    let password = strip_newline(&line);
    if read == 0 || password.is_empty() {
        return Err(Failure::usage(
            "no password given (use --password, DNZ_PASSWORD for login, or type one)",
        ));
    }
    Ok(password.to_string())
}

/// Only the line end goes: spaces may be part of a password.
fn strip_newline(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

/// Turns terminal echo off for its lifetime, when `stty` can.
struct EchoOff {
    active: bool,
}

impl EchoOff {
    fn new() -> EchoOff {
        EchoOff {
            active: stty("-echo"),
        }
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        if self.active {
            stty("echo");
        }
    }
}

/// `stty` acts on its stdin, which is inherited: the terminal.
fn stty(setting: &str) -> bool {
    Command::new("stty")
        .arg(setting)
        .stdin(Stdio::inherit())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_line_end_is_stripped() {
        assert_eq!(strip_newline(" pass word \r\n"), " pass word ");
        assert_eq!(strip_newline("pw\n"), "pw");
        assert_eq!(strip_newline("pw"), "pw");
    }
}
