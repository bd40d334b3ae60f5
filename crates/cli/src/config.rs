//! Where the CLI finds its server and token (SPEC §1): `--server`/`--token` (clap folds in
//! `DNZ_SERVER`/`DNZ_TOKEN`), then the config file written by `dnz login`, then
//! `<data dir>/admin.token` with the local default server.
//!
//! The config file is `$XDG_CONFIG_HOME/dnz/config.toml` (else `~/.config/dnz/config.toml`),
//! mode 0600, holding `key = "value"` lines: a subset of TOML that this module writes and
//! reads itself.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::Failure;

/// Where `dnz serve` listens for the API by default.
pub(crate) const DEFAULT_SERVER: &str = "http://127.0.0.1:8053";

/// The contents of the config file; unknown keys are ignored so newer files still load.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ConfigFile {
    pub server: Option<String>,
    pub user: Option<String>,
    pub token: Option<String>,
}

/// The config file's path from the environment, `None` when there is no home to put it in.
pub(crate) fn config_path() -> Option<PathBuf> {
    config_path_from(
        std::env::var_os("XDG_CONFIG_HOME"),
        std::env::var_os("HOME"),
    )
}

fn config_path_from(
    xdg_config_home: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    // The XDG spec says relative values are invalid and must be ignored.
    let base = match xdg_config_home.map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir,
        _ => {
            let home = PathBuf::from(home.filter(|h| !h.is_empty())?);
            home.join(".config")
        }
    };
    Some(base.join("dnz").join("config.toml"))
}

/// Parses `key = "value"` lines; blank lines and `#` comments are skipped.
pub(crate) fn parse(text: &str) -> Result<ConfigFile, String> {
    let mut config = ConfigFile::default();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = || format!("line {}: expected key = \"value\"", index + 1);
        let (key, value) = line.split_once('=').ok_or_else(bad)?;
        let value = unquote(value.trim()).ok_or_else(bad)?;
        match key.trim() {
            "server" => config.server = Some(value),
            "user" => config.user = Some(value),
            "token" => config.token = Some(value),
            _ => {}
        }
    }
    Ok(config)
}

/// The file's text; values are TOML basic strings.
pub(crate) fn render(config: &ConfigFile) -> String {
    let mut out = String::from("# dnz CLI settings, written by `dnz login`.\n");
    for (key, value) in [
        ("server", &config.server),
        ("user", &config.user),
        ("token", &config.token),
    ] {
        if let Some(value) = value {
            out.push_str(&format!("{key} = {}\n", quote(value)));
        }
    }
    out
}

fn quote(value: &str) -> String {
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The inverse of [`quote`]: a TOML basic string with no trailing text but a comment.
fn unquote(text: &str) -> Option<String> {
    let mut chars = text.strip_prefix('"')?.chars();
    let mut out = String::new();
    loop {
        match chars.next()? {
            '"' => break,
            '\\' => match chars.next()? {
                '"' => out.push('"'),
                '\\' => out.push('\\'),
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    let code = u32::from_str_radix(&hex, 16).ok()?;
                    out.push(char::from_u32(code)?);
                }
                _ => return None,
            },
            c => out.push(c),
        }
    }
    let rest = chars.as_str().trim();
    (rest.is_empty() || rest.starts_with('#')).then_some(out)
}

/// Reads the config file; `None` when it does not exist.
pub(crate) fn load(path: &Path) -> Result<Option<ConfigFile>, Failure> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Failure::runtime(format!(
                "cannot read config file {}: {e}",
                path.display()
            )));
        }
    };
    parse(&text)
        .map(Some)
        .map_err(|e| Failure::runtime(format!("config file {}: {e}", path.display())))
}

/// Writes the config file readable by its owner only. A temporary file is renamed into place
/// so a failed write never leaves half a token behind.
pub(crate) fn save(path: &Path, config: &ConfigFile) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)?;

    let tmp = path.with_extension(format!("toml.tmp{}", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let result = (|| {
        use std::io::Write;
        let mut file = options.open(&tmp)?;
        file.write_all(render(config).as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Where the token in use came from, so a rejected token can be traced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TokenSource {
    Argument,
    ConfigFile(PathBuf),
    AdminTokenFile(PathBuf),
}

impl fmt::Display for TokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenSource::Argument => write!(f, "--token or DNZ_TOKEN"),
            TokenSource::ConfigFile(path) => write!(f, "the config file {}", path.display()),
            TokenSource::AdminTokenFile(path) => write!(f, "{}", path.display()),
        }
    }
}

/// The server to talk to and, when one was found, the token to send it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub server: String,
    pub token: Option<(String, TokenSource)>,
}

/// What [`resolve`] looks at; the environment is read by the caller so tests need none.
pub(crate) struct Sources<'a> {
    /// `--server` or `DNZ_SERVER`.
    pub server: Option<&'a str>,
    /// `--token` or `DNZ_TOKEN`.
    pub token: Option<&'a str>,
    pub config_path: Option<&'a Path>,
    pub data_dir: &'a Path,
}

/// Applies the precedence of SPEC §1. The config file's token is only sent to the server it
/// was issued by: naming another server with `--server` must not leak it there.
pub(crate) fn resolve(sources: &Sources) -> Result<Target, Failure> {
    let arg_server = non_empty(sources.server)
        .map(normalize_server)
        .transpose()?;
    let arg_token = non_empty(sources.token);

    let config = match (sources.config_path, &arg_server, arg_token) {
        // Everything was given: the file is not needed, and a broken one must not get in the way.
        (_, Some(_), Some(_)) | (None, _, _) => None,
        (Some(path), _, _) => load(path)?.map(|config| (path, config)),
    };
    let config_server = match &config {
        Some((path, config)) => match non_empty(config.server.as_deref()) {
            Some(server) => Some(normalize_server(server).map_err(|e| match e {
                Failure::Usage(m) => Failure::runtime(format!("{}: {m}", path.display())),
                other => other,
            })?),
            None => None,
        },
        None => None,
    };

    let server = arg_server
        .or_else(|| config_server.clone())
        .unwrap_or_else(|| DEFAULT_SERVER.to_string());

    if let Some(token) = arg_token {
        return Ok(Target {
            server,
            token: Some((token.to_string(), TokenSource::Argument)),
        });
    }
    if let Some((path, config)) = &config
        && let Some(token) = non_empty(config.token.as_deref())
        && config_server.as_deref() == Some(server.as_str())
    {
        let source = TokenSource::ConfigFile(path.to_path_buf());
        return Ok(Target {
            server,
            token: Some((token.to_string(), source)),
        });
    }
    let token_path = sources.data_dir.join("admin.token");
    let token = match std::fs::read_to_string(&token_path) {
        Ok(text) => non_empty(Some(&text))
            .map(|token| (token.to_string(), TokenSource::AdminTokenFile(token_path))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(Failure::runtime(format!(
                "cannot read {}: {e}",
                token_path.display()
            )));
        }
    };
    Ok(Target { server, token })
}

/// The server `dnz login` talks to: like [`resolve`], but a broken config file is ignored,
/// since logging in replaces it.
pub(crate) fn login_server(
    arg: Option<&str>,
    config_path: Option<&Path>,
) -> Result<String, Failure> {
    if let Some(server) = non_empty(arg) {
        return normalize_server(server);
    }
    let from_file = config_path
        .and_then(|path| load(path).ok().flatten())
        .and_then(|config| config.server)
        .and_then(|server| normalize_server(&server).ok());
    Ok(from_file.unwrap_or_else(|| DEFAULT_SERVER.to_string()))
}

/// Trimmed, and `None` when empty: `DNZ_TOKEN=` means "not set".
fn non_empty(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

/// Checks the scheme and drops trailing slashes so paths can be appended.
pub(crate) fn normalize_server(url: &str) -> Result<String, Failure> {
    let url = url.trim().trim_end_matches('/');
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(host) if !host.is_empty() => Ok(url.to_string()),
        _ => Err(Failure::usage(format!(
            "server URL must look like http://HOST:PORT, got {url:?}"
        ))),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A fresh directory under the system temp dir, removed on drop.
    pub(crate) struct TempDir(pub PathBuf);

    impl TempDir {
        pub(crate) fn new() -> TempDir {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let path = std::env::temp_dir().join(format!(
                "dnz-cli-test-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).expect("create temp dir");
            TempDir(path)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn sources<'a>(
        server: Option<&'a str>,
        token: Option<&'a str>,
        config_path: &'a Path,
        data_dir: &'a Path,
    ) -> Sources<'a> {
        Sources {
            server,
            token,
            config_path: Some(config_path),
            data_dir,
        }
    }

    #[test]
    fn path_prefers_absolute_xdg() {
        assert_eq!(
            config_path_from(Some("/x".into()), Some("/home/a".into())),
            Some(PathBuf::from("/x/dnz/config.toml"))
        );
        assert_eq!(
            config_path_from(Some("rel".into()), Some("/home/a".into())),
            Some(PathBuf::from("/home/a/.config/dnz/config.toml"))
        );
        assert_eq!(config_path_from(None, None), None);
    }

    #[test]
    fn file_round_trips_and_tolerates_comments() {
        let config = ConfigFile {
            server: Some("http://dns.example:8053".into()),
            user: Some("ad\"m\\in".into()),
            token: Some("tok\u{1}en".into()),
        };
        let text = render(&config);
        assert_eq!(parse(&text), Ok(config));
        let parsed = parse("# hi\n\n  server = \"http://a\"  # note\nother = \"x\"\n");
        assert_eq!(parsed.map(|c| c.server), Ok(Some("http://a".into())));
        assert_eq!(
            parse("server = http://a\n"),
            Err("line 1: expected key = \"value\"".into())
        );
        assert!(parse("token = \"abc\" trailing\n").is_err());
    }

    #[test]
    fn save_writes_owner_only_file() {
        let dir = TempDir::new();
        let path = dir.0.join("sub/dnz/config.toml");
        let config = ConfigFile {
            server: Some("http://a".into()),
            user: None,
            token: Some("t".into()),
        };
        save(&path, &config).expect("save");
        assert_eq!(load(&path).ok().flatten(), Some(config));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn resolution_order() {
        let dir = TempDir::new();
        let config_path = dir.0.join("config.toml");
        let data_dir = dir.0.join("data");
        std::fs::create_dir_all(&data_dir).expect("mkdir");

        // Nothing anywhere: the local default server and no token.
        let target = resolve(&sources(None, None, &config_path, &data_dir)).expect("resolve");
        assert_eq!(target.server, DEFAULT_SERVER);
        assert_eq!(target.token, None);

        // The admin token file, trimmed.
        let token_path = data_dir.join("admin.token");
        std::fs::write(&token_path, "  admintok\n").expect("write");
        let target = resolve(&sources(None, None, &config_path, &data_dir)).expect("resolve");
        assert_eq!(
            target.token,
            Some((
                "admintok".into(),
                TokenSource::AdminTokenFile(token_path.clone())
            ))
        );

        // The config file beats the admin token file.
        std::fs::write(
            &config_path,
            "server = \"http://remote:8053/\"\ntoken = \"cfgtok\"\n",
        )
        .expect("write");
        let target = resolve(&sources(None, None, &config_path, &data_dir)).expect("resolve");
        assert_eq!(target.server, "http://remote:8053");
        assert_eq!(
            target.token,
            Some((
                "cfgtok".into(),
                TokenSource::ConfigFile(config_path.clone())
            ))
        );

        // Arguments (or their environment variables) beat the config file.
        let target = resolve(&sources(
            Some("http://other:1"),
            Some(" argtok "),
            &config_path,
            &data_dir,
        ))
        .expect("resolve");
        assert_eq!(target.server, "http://other:1");
        assert_eq!(target.token, Some(("argtok".into(), TokenSource::Argument)));

        // Another server named without a token: the config's token stays home.
        let target = resolve(&sources(
            Some("http://other:1"),
            None,
            &config_path,
            &data_dir,
        ))
        .expect("resolve");
        assert_eq!(
            target.token,
            Some((
                "admintok".into(),
                TokenSource::AdminTokenFile(token_path.clone())
            ))
        );

        // The config's own server named explicitly still uses its token.
        let target = resolve(&sources(
            Some("http://remote:8053"),
            None,
            &config_path,
            &data_dir,
        ))
        .expect("resolve");
        assert_eq!(target.token.map(|t| t.0), Some("cfgtok".into()));

        // A token argument with the config's server.
        let target =
            resolve(&sources(None, Some("argtok"), &config_path, &data_dir)).expect("resolve");
        assert_eq!(target.server, "http://remote:8053");
        assert_eq!(target.token.map(|t| t.0), Some("argtok".into()));

        // Empty values count as unset.
        let target =
            resolve(&sources(Some(""), Some(" "), &config_path, &data_dir)).expect("resolve");
        assert_eq!(target.token.map(|t| t.0), Some("cfgtok".into()));
    }

    #[test]
    fn broken_config_is_reported_unless_unneeded() {
        let dir = TempDir::new();
        let config_path = dir.0.join("config.toml");
        std::fs::write(&config_path, "garbage\n").expect("write");
        let err = resolve(&sources(None, None, &config_path, &dir.0)).expect_err("broken");
        assert!(err.render().contains("line 1"), "{}", err.render());
        assert!(resolve(&sources(Some("http://a"), Some("t"), &config_path, &dir.0)).is_ok());
    }

    #[test]
    fn login_server_ignores_a_broken_file() {
        let dir = TempDir::new();
        let path = dir.0.join("config.toml");
        std::fs::write(&path, "garbage\n").expect("write");
        assert_eq!(
            login_server(None, Some(&path)).ok().as_deref(),
            Some(DEFAULT_SERVER)
        );
        std::fs::write(&path, "server = \"http://b/\"\n").expect("write");
        assert_eq!(
            login_server(None, Some(&path)).ok().as_deref(),
            Some("http://b")
        );
        assert_eq!(
            login_server(Some("http://c"), Some(&path)).ok().as_deref(),
            Some("http://c")
        );
    }

    #[test]
    fn server_urls() {
        assert_eq!(
            normalize_server("http://a:1//").ok(),
            Some("http://a:1".to_string())
        );
        assert!(normalize_server("https://a/prefix").is_ok());
        assert_eq!(
            normalize_server("a:8053").map_err(|e| e.exit_code()).err(),
            Some(2)
        );
        assert!(normalize_server("http://").is_err());
    }
}
