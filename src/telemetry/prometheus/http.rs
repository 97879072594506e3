//! Just enough HTTP/1.1 on `std::net` for a Prometheus scrape and the Prometheus query API:
//! `GET` with `Connection: close`, bounded in time and size on both sides. No TLS: a plain
//! `http://` URL, which is what Prometheus servers and exporters inside a cluster speak; an
//! `https://` URL is refused by name (put a local proxy or an SSH tunnel in front).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// A parsed `http://host[:port][/path][?query]` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub host: String,
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
}

impl Url {
    pub fn parse(s: &str) -> Result<Url, String> {
        let s = s.trim();
        let rest = if let Some(r) = s.strip_prefix("http://") {
            r
        } else if s.starts_with("https://") {
            return Err(format!(
                "{s}: https is not supported; reach the server over plain http (inside the cluster, or through `ssh -L`)"
            ));
        } else if s.contains("://") {
            return Err(format!("{s}: only http:// URLs are supported"));
        } else {
            s
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.contains('@') {
            return Err(format!(
                "{s}: user names and passwords in the URL are not supported"
            ));
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
                let port = p
                    .parse()
                    .map_err(|_| format!("{s}: {p:?} is not a port number"))?;
                (h, port)
            }
            _ => (authority, 80),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(format!("{s}: no host name"));
        }
        Ok(Url {
            host: host.to_owned(),
            port,
            path: path.to_owned(),
        })
    }

    /// `host:port`, as the `Host` header and the `instance` label write it.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The same server with another path and query.
    pub fn with_path(&self, path: &str) -> Url {
        Url {
            path: path.to_owned(),
            ..self.clone()
        }
    }
}

/// Percent-encodes a query parameter value (RFC 3986 unreserved characters stay).
pub fn encode_query(v: &str) -> String {
    let mut out = String::with_capacity(v.len() * 3);
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// What a server answered.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// `GET url`; the whole exchange takes at most about `timeout`, and a body larger than
/// `max_body` bytes is an error rather than an unbounded allocation.
pub fn get(url: &Url, timeout: Duration, max_body: usize) -> Result<Response, String> {
    let deadline = Instant::now() + timeout;
    let addrs: Vec<SocketAddr> = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", url.host))?
        .collect();
    let mut last = format!("{} has no address", url.host);
    let mut stream = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, timeout) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = format!("cannot connect to {}: {e}", url.authority()),
        }
    }
    let mut stream = stream.ok_or(last)?;
    stream.set_write_timeout(Some(timeout)).ok();
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: vram-doctor/{}\r\nAccept: */*\r\nConnection: close\r\n\r\n",
        url.path,
        url.authority(),
        env!("CARGO_PKG_VERSION")
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("sending to {}: {e}", url.authority()))?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    // Head (16 KiB at most) plus body plus chunk framing.
    let cap = max_body.saturating_add(64 * 1024);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("{} took longer than {timeout:?}", url.authority()));
        }
        stream.set_read_timeout(Some(left)).ok();
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                raw.extend_from_slice(&buf[..n]);
                if raw.len() > cap {
                    return Err(format!(
                        "the answer from {} is larger than {} MiB",
                        url.authority(),
                        max_body >> 20
                    ));
                }
                if complete(&raw) {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("reading from {}: {e}", url.authority())),
        }
    }
    parse_response(&raw).map_err(|e| format!("{}: {e}", url.authority()))
}

/// True once a response with a known length has all of it (so a server that keeps the
/// connection open anyway does not cost the whole timeout).
fn complete(raw: &[u8]) -> bool {
    let Some(head_end) = find(raw, b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
    let body = &raw[head_end + 4..];
    if let Some(n) = header(&head, "content-length").and_then(|v| v.parse::<usize>().ok()) {
        return body.len() >= n;
    }
    header(&head, "transfer-encoding").is_some_and(|v| v.contains("chunked"))
        && body.ends_with(b"0\r\n\r\n")
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A header's value from a lower-cased head.
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == name).then(|| v.trim())
    })
}

fn parse_response(raw: &[u8]) -> Result<Response, String> {
    let head_end = find(raw, b"\r\n\r\n").ok_or("the answer is not HTTP (no end of headers)")?;
    let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
    let status = head
        .lines()
        .next()
        .filter(|l| l.starts_with("http/1."))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or("the answer is not HTTP (no status line)")?;
    let mut body = raw[head_end + 4..].to_vec();
    if header(&head, "transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        body = dechunk(&body)?;
    } else if let Some(n) = header(&head, "content-length").and_then(|v| v.parse::<usize>().ok()) {
        if body.len() < n {
            return Err("the answer ended early".into());
        }
        body.truncate(n);
    }
    if header(&head, "content-encoding").is_some_and(|v| v != "identity") {
        return Err("the answer is compressed, which was not asked for".into());
    }
    Ok(Response { status, body })
}

fn dechunk(mut b: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(b.len());
    loop {
        let line_end = find(b, b"\r\n").ok_or("a chunked answer ended early")?;
        let size_text = String::from_utf8_lossy(&b[..line_end]);
        let size_hex = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_hex, 16)
            .map_err(|_| format!("bad chunk size {size_hex:?}"))?;
        b = &b[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        if b.len() < size + 2 {
            return Err("a chunked answer ended early".into());
        }
        out.extend_from_slice(&b[..size]);
        b = &b[size + 2..];
    }
}

/// The request line of a request head a server read: method and path. `None` for anything
/// that is not an HTTP/1.x request line.
pub fn request_line(head: &[u8]) -> Option<(&str, &str)> {
    let line_end = find(head, b"\r\n").unwrap_or(head.len());
    let line = std::str::from_utf8(&head[..line_end]).ok()?;
    let mut parts = line.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    (version.starts_with("HTTP/1.") && parts.next().is_none()).then_some((method, target))
}

/// Reads a request head (up to the blank line) of at most `max` bytes, within `timeout` in all:
/// a client that sends one byte a second cannot hold a connection longer than that.
pub fn read_request_head(
    stream: &mut TcpStream,
    max: usize,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let deadline = Instant::now() + timeout;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("request head not complete in time".into());
        }
        stream.set_read_timeout(Some(left)).ok();
        let n = stream.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("closed before the end of the request".into());
        }
        head.extend_from_slice(&buf[..n]);
        if find(&head, b"\r\n\r\n").is_some() {
            return Ok(head);
        }
        if head.len() > max {
            return Err("request head too large".into());
        }
    }
}

/// Writes a whole response with `Connection: close`.
pub fn respond(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
    head_only: bool,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    if !head_only {
        stream.write_all(body)?;
    }
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = Url::parse("http://prom.lab:9090/api").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("prom.lab", 9090, "/api")
        );
        let u = Url::parse("10.0.0.5:9400/metrics").unwrap();
        assert_eq!(u.authority(), "10.0.0.5:9400");
        assert_eq!(Url::parse("http://h").unwrap().path, "/");
        let u = Url::parse("http://[::1]:9835/metrics").unwrap();
        assert_eq!(
            (u.host.as_str(), u.authority()),
            ("::1", "[::1]:9835".into())
        );
        for bad in [
            "https://h/",
            "ftp://h",
            "http://u:p@h/",
            "http://:80/",
            "http://h:x/",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
        assert!(Url::parse("https://h").unwrap_err().contains("https"));
    }

    #[test]
    fn query_encoding() {
        assert_eq!(
            encode_query("a{b=~\"x|y\"} 1"),
            "a%7Bb%3D~%22x%7Cy%22%7D%201"
        );
    }

    #[test]
    fn responses_plain_chunked_and_broken() {
        let r = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef").unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, b"abc".as_slice()));
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n";
        assert!(complete(raw));
        assert_eq!(parse_response(raw).unwrap().body, b"abcde");
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc").is_err());
        assert!(parse_response(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\nxx").is_err());
    }

    #[test]
    fn request_lines() {
        assert_eq!(
            request_line(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Some(("GET", "/metrics"))
        );
        assert_eq!(request_line(b"\x16\x03\x01garbage"), None);
        assert_eq!(request_line(b"GET / HTTP/1.1 extra\r\n\r\n"), None);
    }
}
