//! libpq connection strings, read as libpq reads them, so that `snowflake_check_peers()` can show
//! a peer without its password and give it a connect timeout it did not set.
//!
//! libpq takes two forms (its `conninfo_parse` and `conninfo_uri_parse`):
//! - **key/value**: `host=db2 password='p w'`; a value is unquoted (up to whitespace) or in single
//!   quotes, and a backslash escapes the next character in both; whitespace may surround `=`, and
//!   after `=` it is skipped even before the next keyword (`password= host=x` sets the password
//!   to `host=x`); a keyword given twice takes its last value;
//! - **URI**: `postgresql://` or `postgres://`, then `user[:password]@` if an `@` comes before the
//!   first `/`, hosts, `/dbname`, and `?key=value&...`, every part percent-encoded.
//!
//! The secrets are the values of `password` and `sslpassword`, wherever they are given (a URI's
//! userinfo and its query, each possibly percent-encoded). [`Conninfo::masked`] replaces each, as
//! written, by `***`, and then every other spelling of it (decoded or encoded) that still occurs;
//! a string that does not parse is never shown at all ([`shown`]).

/// The keywords whose values are secrets.
pub const SECRET_KEYWORDS: [&str; 2] = ["password", "sslpassword"];
const MASK: &str = "***";

/// One `keyword = value` of a connection string: the keyword and value as libpq takes them
/// (unquoted, unescaped, percent-decoded), and where the value is written in the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub keyword: String,
    pub value: String,
    /// Byte range of the value as written (with its quotes, percent-encoded), in the text.
    pub span: (usize, usize),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conninfo {
    pub text: String,
    pub is_uri: bool,
    pub params: Vec<Param>,
}

/// Why a connection string does not parse; never quotes the string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    MissingEquals,
    UnterminatedQuote,
    BadPercentEncoding,
    BadUriQuery,
    UnterminatedIpv6,
}

impl ParseError {
    pub fn reason(self) -> &'static str {
        match self {
            ParseError::MissingEquals => "a keyword without \"=\"",
            ParseError::UnterminatedQuote => "an unterminated quoted value",
            ParseError::BadPercentEncoding => "an invalid percent-encoded character",
            ParseError::BadUriQuery => "a URI query parameter that is not key=value",
            ParseError::UnterminatedIpv6 => "an unterminated IPv6 host address",
        }
    }
}

fn uri_prefix_len(text: &str) -> Option<usize> {
    ["postgresql://", "postgres://"].iter().find(|p| text.starts_with(*p)).map(|p| p.len())
}

/// libpq's `isspace()` in the C locale.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

pub fn parse(text: &str) -> Result<Conninfo, ParseError> {
    let (is_uri, params) = match uri_prefix_len(text) {
        Some(prefix) => (true, parse_uri(text, prefix)?),
        None => (false, parse_key_value(text)?),
    };
    Ok(Conninfo { text: text.to_string(), is_uri, params })
}

fn parse_key_value(text: &str) -> Result<Vec<Param>, ParseError> {
    let b = text.as_bytes();
    let mut params = Vec::new();
    let mut i = 0;
    loop {
        while i < b.len() && is_space(b[i]) {
            i += 1;
        }
        if i == b.len() {
            return Ok(params);
        }
        let key_start = i;
        while i < b.len() && !is_space(b[i]) && b[i] != b'=' {
            i += 1;
        }
        let keyword = text[key_start..i].to_string();
        while i < b.len() && is_space(b[i]) {
            i += 1;
        }
        if i == b.len() || b[i] != b'=' {
            return Err(ParseError::MissingEquals);
        }
        i += 1;
        while i < b.len() && is_space(b[i]) {
            i += 1;
        }
        let value_start = i;
        let mut value = Vec::new();
        if i < b.len() && b[i] == b'\'' {
            i += 1;
            loop {
                match b.get(i) {
                    None => return Err(ParseError::UnterminatedQuote),
                    Some(b'\\') => {
                        i += 1;
                        if let Some(&c) = b.get(i) {
                            value.push(c);
                            i += 1;
                        }
                    }
                    Some(b'\'') => {
                        i += 1;
                        break;
                    }
                    Some(&c) => {
                        value.push(c);
                        i += 1;
                    }
                }
            }
        } else {
            while i < b.len() && !is_space(b[i]) {
                if b[i] == b'\\' {
                    i += 1;
                    if i < b.len() {
                        value.push(b[i]);
                        i += 1;
                    }
                } else {
                    value.push(b[i]);
                    i += 1;
                }
            }
        }
        params.push(Param { keyword, value: String::from_utf8_lossy(&value).into_owned(), span: (value_start, i) });
    }
}

/// libpq's `conninfo_uri_decode`: `%XX` to its byte; `%00` and a bad `%` are refused.
fn percent_decode(s: &str) -> Result<String, ParseError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3).ok_or(ParseError::BadPercentEncoding)?;
            let v = u8::from_str_radix(hex, 16).map_err(|_| ParseError::BadPercentEncoding)?;
            if v == 0 || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(ParseError::BadPercentEncoding);
            }
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn parse_uri(text: &str, prefix: usize) -> Result<Vec<Param>, ParseError> {
    let b = text.as_bytes();
    let mut params = Vec::new();
    let mut i = prefix;
    // userinfo: only if an '@' comes before the first '/'.
    let mut j = i;
    while j < b.len() && b[j] != b'@' && b[j] != b'/' {
        j += 1;
    }
    if j < b.len() && b[j] == b'@' {
        let userinfo = &text[i..j];
        let (user, password) = match userinfo.find(':') {
            Some(colon) => (&userinfo[..colon], Some((i + colon + 1, j))),
            None => (userinfo, None),
        };
        if !user.is_empty() {
            params.push(Param { keyword: "user".into(), value: percent_decode(user)?, span: (i, i + user.len()) });
        }
        if let Some((start, end)) = password {
            if start < end {
                params.push(Param {
                    keyword: "password".into(),
                    value: percent_decode(&text[start..end])?,
                    span: (start, end),
                });
            }
        }
        i = j + 1;
    }
    // Hosts and ports, then /dbname, up to the query.
    while i < b.len() && b[i] != b'?' {
        if b[i] == b'[' {
            match text[i..].find(']') {
                Some(close) => i += close + 1,
                None => return Err(ParseError::UnterminatedIpv6),
            }
        } else {
            i += 1;
        }
    }
    if i < b.len() {
        i += 1; // '?'
        let query = &text[i..];
        // As libpq: nothing after '?', or a last '&', ends the query; an empty piece elsewhere fails.
        let query = query.strip_suffix('&').unwrap_or(query);
        for piece in query.split('&').filter(|_| !query.is_empty()) {
            let start = i;
            i += piece.len() + 1;
            let mut kv = piece.splitn(2, '=');
            let (key, value) = (kv.next().unwrap_or(""), kv.next().ok_or(ParseError::BadUriQuery)?);
            if value.contains('=') {
                return Err(ParseError::BadUriQuery);
            }
            let value_start = start + key.len() + 1;
            params.push(Param {
                keyword: percent_decode(key)?,
                value: percent_decode(value)?,
                span: (value_start, value_start + value.len()),
            });
        }
    }
    Ok(params)
}

impl Conninfo {
    fn secret_params(&self) -> impl Iterator<Item = &Param> {
        self.params.iter().filter(|p| SECRET_KEYWORDS.contains(&p.keyword.as_str()))
    }

    /// Every secret as libpq reads it and as it is written (quoted, encoded): what must never be
    /// shown, also in messages about this connection.
    pub fn secrets(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in self.secret_params() {
            for s in [p.value.clone(), self.text[p.span.0..p.span.1].to_string()] {
                if !s.is_empty() && !out.contains(&s) {
                    out.push(s);
                }
            }
        }
        out
    }

    /// The connection string as written, each secret value replaced by `***`.
    pub fn masked(&self) -> String {
        let mut spans: Vec<(usize, usize)> = self.secret_params().map(|p| p.span).collect();
        spans.sort_unstable();
        let mut out = String::with_capacity(self.text.len());
        let mut at = 0;
        for (start, end) in spans {
            if start < at {
                continue;
            }
            out.push_str(&self.text[at..start]);
            out.push_str(MASK);
            at = end;
        }
        out.push_str(&self.text[at..]);
        redact(&out, &self.secrets())
    }

    /// The value libpq would use for `keyword` (the last one given), if any.
    pub fn get(&self, keyword: &str) -> Option<&str> {
        self.params.iter().rev().find(|p| p.keyword == keyword).map(|p| p.value.as_str())
    }

    /// The connection string with `connect_timeout=seconds` added, unless it sets one.
    pub fn with_connect_timeout(&self, seconds: u32) -> String {
        if self.get("connect_timeout").is_some() {
            return self.text.clone();
        }
        if self.is_uri {
            let sep = match self.text.find('?') {
                None => "?",
                Some(_) if self.text.ends_with('?') || self.text.ends_with('&') => "",
                Some(_) => "&",
            };
            format!("{}{sep}connect_timeout={seconds}", self.text)
        } else {
            // In front: a value may end in a backslash, which would swallow a space after it.
            format!("connect_timeout={seconds} {}", self.text)
        }
    }
}

/// Secrets shorter than this are masked where they are written, not searched for elsewhere (a
/// one-letter password would otherwise mask that letter everywhere).
pub const MIN_REDACTED_LEN: usize = 4;

/// `text` with every occurrence of each secret (of at least [`MIN_REDACTED_LEN`] bytes) replaced
/// by `***`, longest first.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut secrets: Vec<&String> = secrets.iter().filter(|s| s.len() >= MIN_REDACTED_LEN).collect();
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut out = text.to_string();
    for s in secrets {
        out = out.replace(s.as_str(), MASK);
    }
    out
}

/// How a peer is shown: its connection string without secrets, or, if it does not parse, not at
/// all (libpq may read it differently from us, so no part of it is safe to show).
pub fn shown(text: &str, position: usize) -> String {
    match parse(text) {
        Ok(c) => c.masked(),
        Err(e) => format!("peer {position} (not shown: its connection string has {})", e.reason()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn masked(text: &str) -> String {
        parse(text).unwrap().masked()
    }

    #[test]
    fn key_value_forms() {
        assert_eq!(masked("host=db2 password=secret dbname=app"), "host=db2 password=*** dbname=app");
        assert_eq!(masked("host=db2 password = 'p w' user=u"), "host=db2 password = *** user=u");
        assert_eq!(masked(r"password='it\'s' host=x"), "password=*** host=x");
        assert_eq!(masked(r"password=a\ b host=x"), "password=*** host=x");
        assert_eq!(masked("PASSWORD=x host=y"), "PASSWORD=x host=y", "libpq keywords are case-sensitive");
        assert_eq!(masked("sslpassword=k password=p"), "sslpassword=*** password=***");
        assert_eq!(masked("password=a password=b"), "password=*** password=***");
        // After '=' libpq skips whitespace even before the next keyword.
        let c = parse("password= host=x").unwrap();
        assert_eq!(c.get("password"), Some("host=x"));
        assert_eq!(c.masked(), "password= ***");
        assert_eq!(parse(r"password='it\'s'").unwrap().get("password"), Some("it's"));
    }

    #[test]
    fn uri_forms() {
        assert_eq!(masked("postgresql://alice:pw@127.0.0.1:1/db"), "postgresql://alice:***@127.0.0.1:1/db");
        assert_eq!(masked("postgres://alice:pw@h/db"), "postgres://alice:***@h/db");
        assert_eq!(
            masked("postgresql://h/db?user=a&password=pw&sslmode=disable"),
            "postgresql://h/db?user=a&password=***&sslmode=disable"
        );
        assert_eq!(masked("postgresql://a:p%40ss@h/db"), "postgresql://a:***@h/db");
        assert_eq!(parse("postgresql://a:p%40ss@h/db").unwrap().get("password"), Some("p@ss"));
        // A percent-encoded keyword is still the keyword.
        assert_eq!(masked("postgresql://h/db?pass%77ord=pw"), "postgresql://h/db?pass%77ord=***");
        assert_eq!(masked("postgresql://[::1]:5432/db?password=x"), "postgresql://[::1]:5432/db?password=***");
        assert_eq!(masked("postgresql://u@h"), "postgresql://u@h");
        assert_eq!(masked("postgresql://h/db"), "postgresql://h/db");
        // Not a URI prefix: read as key/value, which then fails.
        assert_eq!(parse("PostgreSQL://u:pw@h").unwrap_err(), ParseError::MissingEquals);
    }

    #[test]
    fn a_secret_repeated_elsewhere_is_masked_there_too() {
        assert_eq!(masked("password=hunter2 application_name=hunter2"), "password=*** application_name=***");
        assert_eq!(
            redact("connection failed: p@ss and p%40ss", &parse("postgresql://a:p%40ss@h").unwrap().secrets()),
            "connection failed: *** and ***"
        );
    }

    #[test]
    fn unparsable_strings_are_not_shown() {
        for text in
            ["host=x password 'secret'", "password='secret", "postgresql://h?password=%zz", "postgresql://h?password"]
        {
            let shown = shown(text, 3);
            assert!(shown.starts_with("peer 3 (not shown"), "{shown}");
            assert!(!shown.contains("secret"));
        }
    }

    #[test]
    fn connect_timeout_is_added_unless_set() {
        let t = |s: &str| parse(s).unwrap().with_connect_timeout(5);
        assert_eq!(t("host=x"), "connect_timeout=5 host=x");
        assert_eq!(t(r"host=x password=a\"), r"connect_timeout=5 host=x password=a\");
        assert_eq!(t("host=x connect_timeout=30"), "host=x connect_timeout=30");
        assert_eq!(t("postgresql://h/db"), "postgresql://h/db?connect_timeout=5");
        assert_eq!(t("postgresql://h/db?sslmode=disable"), "postgresql://h/db?sslmode=disable&connect_timeout=5");
        assert_eq!(t("postgresql://h/db?connect_timeout=1"), "postgresql://h/db?connect_timeout=1");
        for s in ["host=x", "postgresql://h/db", "postgresql://h/db?a=b", "postgresql://h?"] {
            assert_eq!(parse(&t(s)).unwrap().get("connect_timeout"), Some("5"), "{s}");
        }
    }

    /// A password as someone might write it in each form.
    fn quote_kv(p: &str) -> String {
        format!("'{}'", p.replace('\\', "\\\\").replace('\'', "\\'"))
    }

    fn encode_uri(p: &str) -> String {
        p.bytes()
            .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
            .collect()
    }

    proptest! {
        #[test]
        fn any_password_is_read_back_and_never_shown(p in "[ -~]{4,24}") {
            let forms = [
                format!("host=h password={} dbname=d", quote_kv(&p)),
                format!("postgresql://u:{}@h:5432/d", encode_uri(&p)),
                format!("postgres://h/d?sslmode=disable&password={}", encode_uri(&p)),
            ];
            for text in forms {
                let c = parse(&text).unwrap();
                prop_assert_eq!(c.get("password"), Some(p.as_str()));
                let m = c.masked();
                prop_assert!(!m.contains(&p), "{} -> {}", text, m);
                let connect = c.with_connect_timeout(5);
                let again = parse(&connect).unwrap();
                prop_assert_eq!(again.get("password"), Some(p.as_str()));
                prop_assert_eq!(again.get("connect_timeout"), Some("5"));
            }
        }

        #[test]
        fn nothing_panics(text in ".{0,60}") {
            let _ = shown(&text, 1);
            if let Ok(c) = parse(&text) {
                let _ = c.with_connect_timeout(5);
            }
        }
    }
}
