//! Plain text tables for humans: a header row and left-aligned columns two spaces apart.

/// A table under construction. Cells are escaped (see [`escape_controls`]) as they are added,
/// so server data cannot move the terminal's cursor or break the alignment.
pub(crate) struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|cell| cell.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows
            .push(cells.iter().map(|cell| escape_controls(cell)).collect());
    }

    /// Every line ends in a newline; the last column is not padded, so no line has trailing
    /// spaces.
    pub(crate) fn render(&self) -> String {
        render_rows(std::iter::once(&self.header).chain(&self.rows))
    }
}

/// Name/value lines for one object (`zone show`), names aligned, no header.
pub(crate) fn pairs(rows: &[(&str, String)]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(name, value)| vec![name.to_string(), escape_controls(value)])
        .collect();
    render_rows(&rows)
}

fn render_rows<'a>(rows: impl IntoIterator<Item = &'a Vec<String>> + Clone) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows.clone() {
        for (i, cell) in row.iter().enumerate() {
            let width = cell.chars().count();
            match widths.get_mut(i) {
                Some(w) => *w = (*w).max(width),
                None => widths.push(width),
            }
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            line.push_str(cell);
            if i + 1 < row.len() {
                let pad = widths[i] - cell.chars().count();
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Replaces control characters with DNS-style `\DDD` escapes (what a zone file would show).
pub(crate) fn escape_controls(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            let mut buf = [0u8; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\{byte:03}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Seconds since the Unix epoch as `YYYY-MM-DD HH:MM:SS` UTC.
pub(crate) fn format_unix_time(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_and_last_is_not_padded() {
        let mut table = Table::new(&["ID", "NAME", "TYPE", "TTL", "VALUE"]);
        table.row(vec![
            "1".into(),
            "@".into(),
            "MX".into(),
            "3600".into(),
            "10 mail.example.com.".into(),
        ]);
        table.row(vec![
            "12".into(),
            "www".into(),
            "A".into(),
            "60".into(),
            "192.0.2.1".into(),
        ]);
        assert_eq!(
            table.render(),
            "ID  NAME  TYPE  TTL   VALUE\n\
             1   @     MX    3600  10 mail.example.com.\n\
             12  www   A     60    192.0.2.1\n"
        );
    }

    #[test]
    fn header_only_and_wide_characters() {
        assert_eq!(Table::new(&["NAME", "ROLE"]).render(), "NAME  ROLE\n");
        let mut table = Table::new(&["NAME", "SERIAL"]);
        table.row(vec!["bücher.example".into(), "1".into()]);
        table.row(vec!["a".into(), "".into()]);
        assert_eq!(
            table.render(),
            "NAME            SERIAL\nbücher.example  1\na\n"
        );
    }

    #[test]
    fn cells_escape_control_characters() {
        let mut table = Table::new(&["VALUE"]);
        table.row(vec!["a\nb\x1b".into()]);
        assert_eq!(table.render(), "VALUE\na\\010b\\027\n");
    }

    #[test]
    fn pairs_align_names() {
        assert_eq!(
            pairs(&[
                ("zone", "example.com".into()),
                ("default TTL", "3600".into())
            ]),
            "zone         example.com\ndefault TTL  3600\n"
        );
    }

    #[test]
    fn unix_time() {
        assert_eq!(format_unix_time(0), "1970-01-01 00:00:00");
        assert_eq!(format_unix_time(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(format_unix_time(1_700_000_000), "2023-11-14 22:13:20");
        assert_eq!(format_unix_time(-1), "1969-12-31 23:59:59");
    }
}
