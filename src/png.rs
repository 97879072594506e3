//! A minimal PNG writer for plots made without a display (`vram-doctor run --report`): an
//! 8-bit indexed-colour image, its pixel rows in zlib *stored* (uncompressed) deflate blocks.
//! That is a valid PNG every viewer reads (PNG spec, ISO/IEC 15948 §10: compression method 0 is
//! zlib, RFC 1950; RFC 1951 §3.2.4 non-compressed blocks), at the cost of size: one byte per
//! pixel, 320 KB for an 800 × 400 plot. No image crate is needed for that.

/// An image of palette indices, row by row, with its palette (at most 256 RGB colours).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Indexed {
    pub width: u32,
    pub height: u32,
    pub palette: Vec<[u8; 3]>,
    /// `width * height` indices into `palette`.
    pub pixels: Vec<u8>,
}

impl Indexed {
    /// A `width` × `height` image filled with palette entry 0.
    pub fn new(width: u32, height: u32, palette: Vec<[u8; 3]>) -> Indexed {
        Indexed {
            width,
            height,
            palette,
            pixels: vec![0; width as usize * height as usize],
        }
    }

    /// Sets one pixel; coordinates outside the image are ignored (lines may run off the edge).
    pub fn set(&mut self, x: i64, y: i64, colour: u8) {
        if x >= 0
            && y >= 0
            && (x as u64) < u64::from(self.width)
            && (y as u64) < u64::from(self.height)
        {
            self.pixels[y as usize * self.width as usize + x as usize] = colour;
        }
    }

    /// The PNG file.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
        let mut ihdr = Vec::with_capacity(13);
        ihdr.extend(self.width.to_be_bytes());
        ihdr.extend(self.height.to_be_bytes());
        // Bit depth 8, colour type 3 (palette), compression 0, filter 0, no interlace.
        ihdr.extend([8, 3, 0, 0, 0]);
        chunk(&mut out, b"IHDR", &ihdr);
        let plte: Vec<u8> = self.palette.iter().take(256).flatten().copied().collect();
        chunk(&mut out, b"PLTE", &plte);
        // Each row starts with its filter type, 0 (none).
        let w = self.width as usize;
        let mut raw = Vec::with_capacity((w + 1) * self.height as usize);
        for row in self.pixels.chunks(w.max(1)).take(self.height as usize) {
            raw.push(0);
            raw.extend_from_slice(row);
        }
        chunk(&mut out, b"IDAT", &zlib_stored(&raw));
        chunk(&mut out, b"IEND", &[]);
        out
    }
}

/// One chunk: length, type, data, CRC-32 of type and data.
fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend((data.len() as u32).to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let mut c = Crc32::default();
    c.update(kind);
    c.update(data);
    out.extend(c.finish().to_be_bytes());
}

/// A zlib stream of stored deflate blocks (RFC 1950 header 0x78 0x01, blocks of at most 65535
/// bytes, Adler-32 of the data at the end).
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = if data.is_empty() {
        vec![&[]]
    } else {
        data.chunks(0xFFFF).collect()
    };
    let last = blocks.len() - 1;
    for (i, b) in blocks.iter().enumerate() {
        out.push(u8::from(i == last)); // BFINAL, BTYPE = 00
        let len = b.len() as u16;
        out.extend(len.to_le_bytes());
        out.extend((!len).to_le_bytes());
        out.extend_from_slice(b);
    }
    out.extend(adler32(data).to_be_bytes());
    out
}

/// CRC-32 as PNG uses it (ISO 3309 polynomial, reflected, PNG spec annex D).
#[derive(Debug, Clone, Copy)]
pub struct Crc32(u32);

impl Default for Crc32 {
    fn default() -> Self {
        Crc32(0xFFFF_FFFF)
    }
}

impl Crc32 {
    pub fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            let mut c = (self.0 ^ u32::from(b)) & 0xFF;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            self.0 = c ^ (self.0 >> 8);
        }
    }

    pub fn finish(self) -> u32 {
        self.0 ^ 0xFFFF_FFFF
    }
}

/// Adler-32 (RFC 1950 §8.2).
pub fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    // 5552 is the most bytes before the sums can overflow u32 (zlib's NMAX).
    for block in data.chunks(5552) {
        for &x in block {
            a += u32::from(x);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_match_their_reference_values() {
        // Check values from the CRC catalogue (CRC-32/ISO-HDLC) and RFC 1950's Adler-32 example.
        let mut c = Crc32::default();
        c.update(b"123456789");
        assert_eq!(c.finish(), 0xCBF4_3926);
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
        assert_eq!(adler32(&[]), 1);
    }

    #[test]
    fn stored_blocks_split_at_64_kib_and_mark_the_last() {
        let data = vec![7u8; 70_000];
        let z = zlib_stored(&data);
        assert_eq!(&z[..2], &[0x78, 0x01]);
        assert_eq!(z[2], 0, "first block is not final");
        assert_eq!(u16::from_le_bytes([z[3], z[4]]), 0xFFFF);
        let second = 2 + 5 + 0xFFFF;
        assert_eq!(z[second], 1, "second block is final");
        assert_eq!(
            u16::from_le_bytes([z[second + 1], z[second + 2]]) as usize,
            70_000 - 0xFFFF
        );
        assert_eq!(z.len(), 2 + 2 * 5 + 70_000 + 4);
    }

    #[test]
    fn encodes_signature_header_and_pixels() {
        let mut img = Indexed::new(3, 2, vec![[255, 255, 255], [255, 0, 0]]);
        img.set(1, 1, 1);
        img.set(-1, 9, 1);
        let png = img.encode();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[12..16], b"IHDR");
        assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 3);
        assert_eq!(u32::from_be_bytes(png[20..24].try_into().unwrap()), 2);
        assert_eq!(img.pixels, vec![0, 0, 0, 0, 1, 0]);
        assert!(png.ends_with(&[0, 0, 0, 0, b'I', b'E', b'N', b'D', 0xAE, 0x42, 0x60, 0x82]));
    }
}
