//! A reader for the headers of untrusted binary files (GGUF, safetensors).
//!
//! Every length or count read from the file is checked against the bytes that are really left
//! before anything is allocated or skipped, so a hostile header cannot ask for a huge buffer or
//! send the parser past the end; every error names the file and what was being read.

use crate::import::ImportError;
use std::io::{Read, Seek};

/// Reads little-endian fields from `inner`, which holds `len` bytes in all.
pub struct HeaderReader<R> {
    inner: R,
    pos: u64,
    len: u64,
    origin: String,
}

impl<R: Read + Seek> HeaderReader<R> {
    /// `origin` names the file in error messages.
    pub fn new(inner: R, len: u64, origin: &str) -> Self {
        HeaderReader {
            inner,
            pos: 0,
            len,
            origin: origin.to_string(),
        }
    }

    pub fn pos(&self) -> u64 {
        self.pos
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn remaining(&self) -> u64 {
        self.len.saturating_sub(self.pos)
    }

    /// An error message naming the file.
    pub fn err(&self, msg: impl std::fmt::Display) -> String {
        format!("{}: {msg}", self.origin)
    }

    /// A read or seek of the opened file failed: the system's problem.
    fn failed(&self, what: String, source: std::io::Error) -> ImportError {
        ImportError::Read {
            origin: self.origin.clone(),
            what,
            source,
        }
    }

    fn truncated(&self, n: u64, what: &str) -> String {
        self.err(format_args!(
            "file ends inside the header: {what} needs {n} bytes at offset {} but only {} are left (truncated or not a model file?)",
            self.pos,
            self.remaining()
        ))
    }

    /// Fails unless `n` more bytes exist.
    pub fn need(&self, n: u64, what: &str) -> Result<(), ImportError> {
        if n > self.remaining() {
            Err(self.truncated(n, what).into())
        } else {
            Ok(())
        }
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], ImportError> {
        self.need(N as u64, what)?;
        let mut b = [0u8; N];
        self.inner
            .read_exact(&mut b)
            .map_err(|e| self.failed(format!("read {what}"), e))?;
        self.pos += N as u64;
        Ok(b)
    }

    pub fn u8(&mut self, what: &str) -> Result<u8, ImportError> {
        Ok(self.array::<1>(what)?[0])
    }

    pub fn u16(&mut self, what: &str) -> Result<u16, ImportError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    pub fn u32(&mut self, what: &str) -> Result<u32, ImportError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    pub fn u64(&mut self, what: &str) -> Result<u64, ImportError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// Reads `n` bytes into a fresh buffer; `n` is checked against the bytes left first.
    pub fn bytes(&mut self, n: u64, what: &str) -> Result<Vec<u8>, ImportError> {
        self.need(n, what)?;
        let size = usize::try_from(n).map_err(|_| self.truncated(n, what))?;
        let mut buf = vec![0u8; size];
        self.inner
            .read_exact(&mut buf)
            .map_err(|e| self.failed(format!("read {what}"), e))?;
        self.pos += n;
        Ok(buf)
    }

    /// Moves past `n` bytes without reading them. `seek_relative` keeps a `BufReader`'s buffer
    /// when the target is inside it, so skipping 250k short tokenizer strings costs no syscalls.
    pub fn skip(&mut self, n: u64, what: &str) -> Result<(), ImportError> {
        self.need(n, what)?;
        let step = i64::try_from(n).map_err(|_| self.truncated(n, what))?;
        self.inner
            .seek_relative(step)
            .map_err(|e| self.failed(format!("skip {what}"), e))?;
        self.pos += n;
        Ok(())
    }
}

/// Opens a file for header reading and returns it with its real size.
pub fn open(
    path: &std::path::Path,
) -> Result<HeaderReader<std::io::BufReader<std::fs::File>>, ImportError> {
    let (file, len) = crate::input_file::open_regular(path)?;
    Ok(HeaderReader::new(
        std::io::BufReader::new(file),
        len,
        &path.display().to_string(),
    ))
}

/// Reads a whole small text file (JSON), refusing anything over `max` bytes.
pub fn read_small_text(path: &std::path::Path, max: u64) -> Result<String, ImportError> {
    Ok(crate::input_file::read_text_capped(
        path,
        max,
        "this kind of file",
    )?)
}

/// A name read from a file, fit for a one-line message: quoted, control characters escaped
/// (`crate::printable`), cut to 80 characters.
pub fn shown(name: &str) -> String {
    format!("\"{}\"", crate::printable::printable_cut(name, 80))
}

/// A name from a file (a shard, a pipeline component) must stay inside that file's folder.
pub fn is_plain_file_name(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains(['/', '\\', '\0', ':'])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn lengths_beyond_the_data_are_refused_before_allocating() {
        let data = [1u8, 0, 0, 0, 9, 9];
        let mut r = HeaderReader::new(Cursor::new(&data[..]), data.len() as u64, "x.bin");
        assert_eq!(r.u32("count").unwrap(), 1);
        let e = r.bytes(u64::MAX, "a string").unwrap_err().to_string();
        assert!(
            e.starts_with("x.bin: file ends inside the header: a string"),
            "{e}"
        );
        assert!(r.skip(3, "padding").is_err());
        r.skip(2, "padding").unwrap();
        assert_eq!(r.remaining(), 0);
        assert!(r.u8("byte").is_err());
    }

    /// A read that fails after the size was checked is the system's failure, named with the
    /// file and what was being read; a length past the end is the file's.
    #[test]
    fn a_failed_read_is_not_a_malformed_file() {
        struct Failing;
        impl Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("device gone"))
            }
        }
        impl Seek for Failing {
            fn seek(&mut self, _: std::io::SeekFrom) -> std::io::Result<u64> {
                Err(std::io::Error::other("device gone"))
            }
        }
        let mut r = HeaderReader::new(Failing, 16, "x.bin");
        let e = r.u32("the count").unwrap_err();
        assert!(matches!(e, ImportError::Read { .. }), "{e:?}");
        assert!(!e.is_bad_input());
        assert_eq!(e.to_string(), "x.bin: cannot read the count: device gone");
        let e = r.skip(4, "padding").unwrap_err();
        assert_eq!(e.to_string(), "x.bin: cannot skip padding: device gone");
        let e = r.bytes(17, "a string").unwrap_err();
        assert!(e.is_bad_input(), "{e:?}");
    }

    #[test]
    fn names_in_messages_stay_on_one_line() {
        assert_eq!(shown("blk.0.attn_q"), "\"blk.0.attn_q\"");
        assert_eq!(shown("a\nb"), "\"a\\nb\"");
        assert_eq!(shown(&"x".repeat(100)).chars().count(), 83);
    }

    #[test]
    fn names_from_files_cannot_leave_the_folder() {
        assert!(is_plain_file_name("model-00001-of-00004.safetensors"));
        for bad in ["../x.safetensors", "/etc/passwd", "a\\b", "", "..", "C:x"] {
            assert!(!is_plain_file_name(bad), "{bad}");
        }
    }
}
