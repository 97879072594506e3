//! The workflow text chunks of a PNG that ComfyUI saved.
//!
//! ComfyUI's SaveImage (nodes.py `SaveImage.save_images`) adds `prompt` (the API graph) and one
//! chunk per `extra_pnginfo` key, `workflow` (the UI graph), with Pillow's `PngInfo.add_text`:
//! a `tEXt` chunk, or an `iTXt` one when the text is not Latin-1. The walk reads chunk headers
//! and seeks past everything else (PNG spec, ISO/IEC 15948 §5.3: length, type, data, CRC), so
//! the image data is never read; each text chunk is bounded before it is read.

use crate::import::ImportError;
use std::io::{Read, Seek, SeekFrom};

pub const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
/// The largest text chunk read: the biggest real workflows are a few MB of JSON.
pub const MAX_TEXT_BYTES: u64 = 32 << 20;

#[derive(Debug, Default)]
pub struct Texts {
    pub workflow: Option<String>,
    pub prompt: Option<String>,
}

/// The `workflow` and `prompt` texts of the PNG in `data`.
pub fn workflow_texts(data: &[u8]) -> Result<Texts, ImportError> {
    walk(std::io::Cursor::new(data), data.len() as u64)
}

/// Walks the chunks of a PNG of `len` bytes from `r` (positioned at the start).
pub fn walk<R: Read + Seek>(mut r: R, len: u64) -> Result<Texts, ImportError> {
    let io = |source| ImportError::Read {
        origin: "PNG".into(),
        what: "read".into(),
        source,
    };
    let mut sig = [0u8; 8];
    r.read_exact(&mut sig)
        .map_err(|_| "PNG: shorter than its signature")?;
    if sig != SIGNATURE {
        return Err("not a PNG (bad signature)".into());
    }
    let mut at = 8u64;
    let mut out = Texts::default();
    loop {
        if at == len {
            // A PNG truncated after a whole chunk still gives the texts it has.
            return Ok(out);
        }
        let mut head = [0u8; 8];
        r.read_exact(&mut head)
            .map_err(|_| format!("PNG: truncated chunk header at byte {at}"))?;
        let n = u64::from(u32::from_be_bytes([head[0], head[1], head[2], head[3]]));
        let kind = [head[4], head[5], head[6], head[7]];
        if !kind.iter().all(u8::is_ascii_alphabetic) {
            return Err(
                format!("PNG: chunk at byte {at} has an invalid type (corrupt file)").into(),
            );
        }
        let end = at + 8 + n + 4;
        if end > len {
            return Err(format!(
                "PNG: chunk '{}' at byte {at} claims {n} bytes, past the end of the file ({len} bytes; truncated?)",
                String::from_utf8_lossy(&kind)
            ).into());
        }
        match &kind {
            b"IEND" => return Ok(out),
            b"tEXt" | b"iTXt" | b"zTXt" => {
                if n > MAX_TEXT_BYTES {
                    return Err(format!(
                        "PNG: a {n}-byte text chunk is larger than any workflow (at most {MAX_TEXT_BYTES} bytes)"
                    ).into());
                }
                let mut buf = vec![0u8; n as usize];
                r.read_exact(&mut buf).map_err(io)?;
                r.seek(SeekFrom::Current(4)).map_err(io)?;
                if let Some((key, text)) = text_chunk(&kind, &buf)? {
                    match key.as_str() {
                        "workflow" => out.workflow = Some(text),
                        "prompt" => out.prompt = Some(text),
                        _ => {}
                    }
                }
            }
            _ => {
                r.seek(SeekFrom::Current((n + 4) as i64)).map_err(io)?;
            }
        }
        at = end;
    }
}

/// Keyword and text of a text chunk whose keyword is `workflow` or `prompt`; other keywords
/// give `None`. Compressed workflow texts are refused: this build has no inflate.
fn text_chunk(kind: &[u8; 4], data: &[u8]) -> Result<Option<(String, String)>, ImportError> {
    let Some(nul) = data.iter().position(|&b| b == 0) else {
        return Ok(None);
    };
    let key = String::from_utf8_lossy(&data[..nul]).into_owned();
    if key != "workflow" && key != "prompt" {
        return Ok(None);
    }
    let rest = &data[nul + 1..];
    let compressed = || {
        format!(
            "PNG: the '{key}' text is compressed; save the workflow from ComfyUI as JSON (Workflow → Export) and open that"
        )
    };
    match kind {
        // tEXt is Latin-1 (PNG spec §11.3.4.3).
        b"tEXt" => Ok(Some((key, rest.iter().map(|&b| char::from(b)).collect()))),
        b"zTXt" => Err(compressed().into()),
        _ => {
            // iTXt: compression flag, method, language tag\0, translated keyword\0, UTF-8 text.
            let [flag, _method, tail @ ..] = rest else {
                return Err(format!("PNG: the '{key}' iTXt chunk is truncated").into());
            };
            if *flag != 0 {
                return Err(compressed().into());
            }
            let mut parts = tail.splitn(3, |&b| b == 0);
            let (_, _, text) = (parts.next(), parts.next(), parts.next());
            let text = text.ok_or_else(|| format!("PNG: the '{key}' iTXt chunk is truncated"))?;
            let text = String::from_utf8(text.to_vec())
                .map_err(|_| format!("PNG: the '{key}' iTXt text is not UTF-8"))?;
            Ok(Some((key, text)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::png::Crc32;

    fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
        let mut c = (data.len() as u32).to_be_bytes().to_vec();
        c.extend_from_slice(kind);
        c.extend_from_slice(data);
        let mut crc = Crc32::default();
        crc.update(kind);
        crc.update(data);
        c.extend_from_slice(&crc.finish().to_be_bytes());
        c
    }

    fn png(chunks: &[Vec<u8>]) -> Vec<u8> {
        let mut p = SIGNATURE.to_vec();
        p.extend(chunk(b"IHDR", &[0, 0, 0, 1, 0, 0, 0, 1, 8, 0, 0, 0, 0]));
        for c in chunks {
            p.extend_from_slice(c);
        }
        p.extend(chunk(b"IEND", &[]));
        p
    }

    #[test]
    fn texts_from_text_and_itxt_chunks() {
        let p = png(&[
            chunk(b"tEXt", b"prompt\0{\"a\":1}"),
            chunk(b"tEXt", b"other\0x"),
            chunk(b"iTXt", "workflow\0\0\0\0\0{\"é\":2}".as_bytes()),
        ]);
        let t = workflow_texts(&p).unwrap();
        assert_eq!(t.prompt.as_deref(), Some("{\"a\":1}"));
        assert_eq!(t.workflow.as_deref(), Some("{\"é\":2}"));
    }

    #[test]
    fn bad_pngs_are_refused_with_a_reason() {
        let ok = png(&[chunk(b"tEXt", b"prompt\0{}")]);
        // Truncated inside a chunk.
        let e = workflow_texts(&ok[..ok.len() - 20])
            .unwrap_err()
            .to_string();
        assert!(e.contains("past the end") || e.contains("truncated"), "{e}");
        // A chunk that claims 4 GiB.
        let mut huge = ok.clone();
        huge[33..37].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(
            workflow_texts(&huge)
                .unwrap_err()
                .to_string()
                .contains("past the end")
        );
        let e = workflow_texts(&png(&[chunk(b"zTXt", b"workflow\0\0xx")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("compressed"), "{e}");
        let e = workflow_texts(&png(&[chunk(b"iTXt", b"prompt\0\x01\0\0\0x")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("compressed"), "{e}");
        assert!(workflow_texts(b"\x89PNG\r\n\x1a").is_err());
    }
}
