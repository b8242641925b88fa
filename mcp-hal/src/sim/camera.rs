//! [`SimCamera`]: an image sensor whose frames the device encodes as PNG itself.

use super::Faults;

/// The dimensions of a frame: 8 to 64 pixels a side
/// ([`SimCamera::MIN_SIDE`]..=[`SimCamera::MAX_SIDE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameSize {
    width: u16,
    height: u16,
}

/// The PNG signature.
const SIGNATURE: [u8; 8] = *b"\x89PNG\r\n\x1a\n";
/// A chunk's length, type and CRC around its data.
const CHUNK: usize = 12;
/// `IHDR`'s data: width, height, bit depth, colour type, compression, filter, interlace.
const IHDR_LEN: usize = 13;
/// The zlib header (deflate, 32 KiB window, no dictionary, fastest) and its Adler-32.
const ZLIB: usize = 2 + 4;
/// A stored deflate block's header: the final bit and type (1 byte), `LEN` and `NLEN`.
const STORED_HEADER: usize = 5;
/// The most a stored block holds.
const STORED_MAX: usize = 65_535;
/// RGB, 8 bits a channel.
const CHANNELS: usize = 3;

impl FrameSize {
    /// `width`×`height`, when both are within
    /// [`SimCamera::MIN_SIDE`]..=[`SimCamera::MAX_SIDE`].
    pub const fn new(width: u16, height: u16) -> Option<Self> {
        let side = SimCamera::MIN_SIDE..=SimCamera::MAX_SIDE;
        // (`RangeInclusive::contains` is not const.)
        if width < *side.start() || width > *side.end() {
            return None;
        }
        if height < *side.start() || height > *side.end() {
            return None;
        }
        Some(FrameSize { width, height })
    }

    /// The width in pixels.
    pub const fn width(self) -> u16 {
        self.width
    }

    /// The height in pixels.
    pub const fn height(self) -> u16 {
        self.height
    }

    /// The image data before compression: each row is a filter byte (0, none) and its pixels.
    const fn raw_len(self) -> usize {
        self.height as usize * (1 + self.width as usize * CHANNELS)
    }

    /// The zlib stream: its header, the stored blocks (at least one) and the Adler-32.
    const fn zlib_len(self) -> usize {
        let raw = self.raw_len();
        let blocks = if raw == 0 {
            1
        } else {
            raw.div_ceil(STORED_MAX)
        };
        ZLIB + blocks * STORED_HEADER + raw
    }

    /// The size of this frame's PNG in bytes, exactly: what
    /// [`Frame::write_png`] writes.
    pub const fn png_len(self) -> usize {
        SIGNATURE.len() + (CHUNK + IHDR_LEN) + (CHUNK + self.zlib_len()) + CHUNK
    }
}

/// A simulated camera: it takes [`Frame`]s of the size asked for, numbered from 1, at once (no
/// exposure time). No fault affects it.
///
/// # The frame
/// A [`Frame`] is a test pattern of [`FrameSize`] (8 to 64 pixels a side, RGB, 8 bits a
/// channel): eight colour bars (white, yellow, cyan, green, magenta, red, blue, black) over the
/// top three quarters, a grey ramp from black to white below them, and in the ramp a red marker
/// column at `x = number % width`, so that two captures differ. [`Frame::pixel`] says what each
/// pixel is; a test compares a decoded image against it.
///
/// # The encoder
/// [`Frame::write_png`] streams the PNG to a sink in pieces of at most a few bytes: no buffer
/// for the image, no allocation, a few dozen bytes of stack (a CRC, an Adler-32, counters). The
/// PNG is the smallest valid one that needs no compressor: the signature, `IHDR`, one `IDAT`
/// holding a zlib stream of *stored* (uncompressed) deflate blocks with its Adler-32, and `IEND`,
/// each chunk with its CRC-32. Stored blocks make the size a formula of the frame's size
/// ([`FrameSize::png_len`]: 12,420 bytes at 64×64, 2,396 at 32×24, 268 at 8×8), known before a
/// byte is written — what a tool needs to refuse a frame that its answer cannot hold before it
/// takes it. The CRC-32 uses a 16-entry table (64 bytes of flash; two table steps a byte). On the
/// qemu-riscv firmware (riscv32imc, release) the demo board's camera tool — encoder, handler,
/// refusal message, schema and description — adds about 6 KiB of flash (`.text` +4.6 KiB,
/// `.rodata` +1.2 KiB) and 8 bytes to the deepest dispatch's stack.
///
/// ```
/// use mcp_hal::sim::{FrameSize, SimCamera};
///
/// let mut camera = SimCamera::default();
/// let size = FrameSize::new(32, 24).unwrap();
/// let frame = camera.capture(size);
/// let mut png = Vec::new();
/// frame.write_png(&mut |bytes: &[u8]| png.extend_from_slice(bytes));
/// assert_eq!(png.len(), size.png_len());
/// assert_eq!(png.len(), 2396);
/// assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
/// assert_eq!(frame.number(), 1);
/// ```
#[derive(Debug, Clone)]
pub struct SimCamera {
    faults: Faults,
    now_ms: u64,
    frames: u32,
}

impl SimCamera {
    /// The smallest side of a frame, in pixels.
    pub const MIN_SIDE: u16 = 8;
    /// The largest side of a frame, in pixels: a 64×64 frame is 12,420 bytes as PNG.
    pub const MAX_SIDE: u16 = 64;

    /// A camera that has taken no frame yet, at time 0.
    pub const fn new(faults: Faults) -> Self {
        SimCamera {
            faults,
            now_ms: 0,
            frames: 0,
        }
    }

    /// Takes a frame of `size`, numbered one more than the last.
    pub fn capture(&mut self, size: FrameSize) -> Frame {
        self.frames = self.frames.wrapping_add(1);
        Frame {
            size,
            number: self.frames,
            at_ms: self.now_ms,
        }
    }

    /// The frames taken.
    pub const fn frames(&self) -> u32 {
        self.frames
    }
}

sim_device!(SimCamera);

/// One frame the [`SimCamera`] took: its size, its number, when it was taken, and its pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    size: FrameSize,
    number: u32,
    at_ms: u64,
}

/// The colour bars, left to right.
const BARS: [[u8; 3]; 8] = [
    [255, 255, 255],
    [255, 255, 0],
    [0, 255, 255],
    [0, 255, 0],
    [255, 0, 255],
    [255, 0, 0],
    [0, 0, 255],
    [0, 0, 0],
];

impl Frame {
    /// Its size.
    pub const fn size(&self) -> FrameSize {
        self.size
    }

    /// Its number: 1 for the camera's first frame.
    pub const fn number(&self) -> u32 {
        self.number
    }

    /// When it was taken, in the camera's milliseconds.
    pub const fn at_ms(&self) -> u64 {
        self.at_ms
    }

    /// The size of its PNG in bytes ([`FrameSize::png_len`]).
    pub const fn png_len(&self) -> usize {
        self.size.png_len()
    }

    /// The pixel at column `x`, row `y` (RGB); black outside the frame.
    pub fn pixel(&self, x: u16, y: u16) -> [u8; 3] {
        let FrameSize { width, height } = self.size;
        if x >= width || y >= height {
            return [0; 3];
        }
        let (x, y, w, h) = (
            u32::from(x),
            u32::from(y),
            u32::from(width),
            u32::from(height),
        );
        if 4 * y < 3 * h {
            let bar = usize::try_from(x * 8 / w).unwrap_or(0);
            return BARS.get(bar).copied().unwrap_or([0; 3]);
        }
        if x == self.number % w {
            return [255, 0, 0];
        }
        // (`x < w`, so the grey is at most 255.)
        let grey = u8::try_from(x * 255 / (w - 1)).unwrap_or(u8::MAX);
        [grey; 3]
    }

    /// Streams the frame as PNG to `out`, in pieces of at most a few bytes:
    /// [`png_len`](Self::png_len) bytes in all.
    pub fn write_png(&self, out: &mut impl FnMut(&[u8])) {
        let FrameSize { width, height } = self.size;
        out(&SIGNATURE);

        let mut ihdr = Chunk::start(out, *b"IHDR", IHDR_LEN);
        ihdr.write(&u32::from(width).to_be_bytes());
        ihdr.write(&u32::from(height).to_be_bytes());
        // 8 bits a channel, colour type 2 (RGB), deflate, adaptive filtering, no interlace.
        ihdr.write(&[8, 2, 0, 0, 0]);
        ihdr.finish();

        let raw = self.size.raw_len();
        let idat = Chunk::start(out, *b"IDAT", self.size.zlib_len());
        let mut z = Stored::start(idat, raw);
        for y in 0..height {
            z.write(&[0]);
            for x in 0..width {
                z.write(&self.pixel(x, y));
            }
        }
        z.finish();

        Chunk::start(out, *b"IEND", 0).finish();
    }
}

/// A PNG chunk being written: its length and type are out, its CRC-32 (over the type and the
/// data) is kept as the data goes by.
struct Chunk<'o, O: FnMut(&[u8])> {
    out: &'o mut O,
    crc: Crc32,
}

impl<'o, O: FnMut(&[u8])> Chunk<'o, O> {
    /// Writes the length (`len` bytes of data follow) and the type.
    fn start(out: &'o mut O, kind: [u8; 4], len: usize) -> Self {
        // A frame's chunks are at most some 12 KiB: the length fits.
        out(&u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes());
        out(&kind);
        let mut crc = Crc32::new();
        crc.update(&kind);
        Chunk { out, crc }
    }

    fn write(&mut self, data: &[u8]) {
        self.crc.update(data);
        (self.out)(data);
    }

    /// Writes the CRC.
    fn finish(self) {
        (self.out)(&self.crc.value().to_be_bytes());
    }
}

/// A zlib stream of stored deflate blocks inside the `IDAT` chunk, for `raw` bytes of image
/// data: a block header wherever a block starts, the Adler-32 of the data at the end.
struct Stored<'o, O: FnMut(&[u8])> {
    chunk: Chunk<'o, O>,
    adler: Adler32,
    /// Bytes still to come, and of them in the current block.
    left: usize,
    left_in_block: usize,
}

impl<'o, O: FnMut(&[u8])> Stored<'o, O> {
    fn start(mut chunk: Chunk<'o, O>, raw: usize) -> Self {
        // CMF: deflate with a 32 KiB window; FLG: level 0, its check bits make 0x7801 a
        // multiple of 31.
        chunk.write(&[0x78, 0x01]);
        let mut z = Stored {
            chunk,
            adler: Adler32::new(),
            left: raw,
            left_in_block: 0,
        };
        if raw == 0 {
            z.block();
        }
        z
    }

    /// Writes the header of the next block, final when it holds the rest.
    fn block(&mut self) {
        let len = self.left.min(STORED_MAX);
        let last = u8::from(len == self.left);
        // `len <= 65_535`.
        let [lo, hi] = u16::try_from(len).unwrap_or(u16::MAX).to_le_bytes();
        self.chunk.write(&[last, lo, hi, !lo, !hi]);
        self.left_in_block = len;
    }

    fn write(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.left_in_block == 0 {
                if self.left == 0 {
                    // More than the size said: not written (never happens: the frame writes
                    // exactly `raw_len` bytes).
                    return;
                }
                self.block();
            }
            let (now, rest) = data.split_at(data.len().min(self.left_in_block));
            self.adler.update(now);
            self.chunk.write(now);
            self.left_in_block -= now.len();
            self.left -= now.len();
            data = rest;
        }
    }

    /// Writes the Adler-32 and the chunk's CRC.
    fn finish(mut self) {
        let adler = self.adler.value().to_be_bytes();
        self.chunk.write(&adler);
        self.chunk.finish();
    }
}

/// CRC-32 (ISO-HDLC: reflected polynomial `0xEDB88320`, initial and final `!0`), as PNG uses.
#[derive(Debug, Clone, Copy)]
struct Crc32(u32);

/// The CRC of each nibble: 16 words, 64 bytes of flash, computed at compile time.
const CRC_NIBBLES: [u32; 16] = {
    let mut table = [0u32; 16];
    let mut n = 0;
    while n < 16 {
        let mut c = n as u32;
        let mut k = 0;
        while k < 4 {
            c = if c & 1 == 1 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        #[allow(
            clippy::indexing_slicing,
            reason = "const evaluation; `n < 16` and the table has 16 entries"
        )]
        {
            table[n] = c;
        }
        n += 1;
    }
    table
};

impl Crc32 {
    const fn new() -> Self {
        Crc32(!0)
    }

    fn update(&mut self, data: &[u8]) {
        let step = |c: u32| {
            let low = usize::try_from(c & 0xF).unwrap_or(0);
            (c >> 4) ^ CRC_NIBBLES.get(low).copied().unwrap_or(0)
        };
        for &b in data {
            self.0 = step(step(self.0 ^ u32::from(b)));
        }
    }

    const fn value(self) -> u32 {
        !self.0
    }
}

/// Adler-32 (RFC 1950), as zlib uses.
#[derive(Debug, Clone, Copy)]
struct Adler32 {
    a: u32,
    b: u32,
}

impl Adler32 {
    const MOD: u32 = 65_521;

    const fn new() -> Self {
        Adler32 { a: 1, b: 0 }
    }

    fn update(&mut self, data: &[u8]) {
        for &byte in data {
            self.a = (self.a + u32::from(byte)) % Self::MOD;
            self.b = (self.b + self.a) % Self::MOD;
        }
    }

    const fn value(self) -> u32 {
        (self.b << 16) | self.a
    }
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "a test")] // a test

    use super::*;

    fn crc(data: &[u8]) -> u32 {
        let mut c = Crc32::new();
        c.update(data);
        c.value()
    }

    fn adler(data: &[u8]) -> u32 {
        let mut a = Adler32::new();
        a.update(data);
        a.value()
    }

    fn png(frame: &Frame) -> Vec<u8> {
        let mut bytes = Vec::new();
        frame.write_png(&mut |b: &[u8]| bytes.extend_from_slice(b));
        bytes
    }

    #[test]
    fn crc32_and_adler32_match_known_vectors() {
        // The check values of the CRC catalogue and of RFC 1950's examples.
        assert_eq!(crc(b""), 0);
        assert_eq!(crc(b"123456789"), 0xCBF4_3926);
        assert_eq!(
            crc(b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
        // The CRC of an empty IEND chunk's type, in every PNG.
        assert_eq!(crc(b"IEND"), 0xAE42_6082);
        assert_eq!(adler(b""), 1);
        assert_eq!(adler(b"Wikipedia"), 0x11E6_0398);
        assert_eq!(adler(b"123456789"), 0x091E_01DE);
        // Past the modulus: 64 KiB of 0xFF (6,000 bytes under Miri: `b` still wraps).
        let ff = vec![0xFF; if cfg!(miri) { 6_000 } else { 65_536 }];
        let (mut a, mut b) = (1u64, 0u64);
        for &x in &ff {
            a = (a + u64::from(x)) % 65_521;
            b = (b + a) % 65_521;
        }
        assert_eq!(u64::from(adler(&ff)), (b << 16) | a);
    }

    #[test]
    fn sizes_are_bounded() {
        assert!(FrameSize::new(7, 8).is_none());
        assert!(FrameSize::new(8, 65).is_none());
        assert!(FrameSize::new(0, 0).is_none());
        assert!(FrameSize::new(8, 8).is_some());
        assert!(FrameSize::new(64, 64).is_some());
        assert_eq!(FrameSize::new(8, 8).unwrap().png_len(), 268);
        assert_eq!(FrameSize::new(32, 24).unwrap().png_len(), 2396);
        assert_eq!(FrameSize::new(64, 64).unwrap().png_len(), 12_420);
    }

    /// Every size's PNG is as long as said, and decodes (by the `png` crate) to the pattern.
    #[test]
    fn the_png_decodes_to_the_pattern() {
        let mut camera = SimCamera::default();
        // (Under Miri, which runs a thousand times slower, the smallest sizes only.)
        let sizes: &[(u16, u16)] = if cfg!(miri) {
            &[(8, 8), (9, 13)]
        } else {
            &[
                (8, 8),
                (9, 13),
                (32, 24),
                (64, 64),
                (64, 8),
                (8, 64),
                (33, 17),
            ]
        };
        for &(w, h) in sizes {
            let size = FrameSize::new(w, h).unwrap();
            let frame = camera.capture(size);
            let bytes = png(&frame);
            assert_eq!(bytes.len(), size.png_len(), "{w}x{h}");
            let decoder = png::Decoder::new(std::io::Cursor::new(&bytes));
            let mut reader = decoder.read_info().unwrap();
            let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
            let info = reader.next_frame(&mut pixels).unwrap();
            assert_eq!((info.width, info.height), (u32::from(w), u32::from(h)));
            assert_eq!(info.color_type, png::ColorType::Rgb);
            assert_eq!(info.bit_depth, png::BitDepth::Eight);
            for y in 0..h {
                for x in 0..w {
                    let at = (usize::from(y) * usize::from(w) + usize::from(x)) * 3;
                    assert_eq!(
                        pixels[at..at + 3],
                        frame.pixel(x, y),
                        "{w}x{h} at ({x}, {y})"
                    );
                }
            }
        }
        assert_eq!(camera.frames(), sizes.len() as u32);
    }

    #[test]
    fn the_pattern_has_bars_a_ramp_and_a_moving_marker() {
        let mut camera = SimCamera::default();
        let size = FrameSize::new(16, 8).unwrap();
        let first = camera.capture(size);
        let second = camera.capture(size);
        assert_eq!((first.number(), second.number()), (1, 2));
        // Bars: two columns each, white first, black last.
        assert_eq!(first.pixel(0, 0), [255, 255, 255]);
        assert_eq!(first.pixel(3, 5), [255, 255, 0]);
        assert_eq!(first.pixel(15, 0), [0, 0, 0]);
        // The ramp in the last quarter (rows 6 and 7): black to white, the marker at
        // `number % width`.
        assert_eq!(first.pixel(0, 7), [0, 0, 0]);
        assert_eq!(first.pixel(15, 7), [255, 255, 255]);
        assert_eq!(first.pixel(1, 6), [255, 0, 0]);
        assert_eq!(second.pixel(2, 6), [255, 0, 0]);
        assert_eq!(second.pixel(1, 6), [17, 17, 17]);
        assert_ne!(png(&first), png(&second), "two captures differ");
        // Outside the frame: black, no panic.
        assert_eq!(first.pixel(16, 0), [0; 3]);
        assert_eq!(first.pixel(u16::MAX, u16::MAX), [0; 3]);
    }

    /// The stored-block writer splits data longer than a block (more than the largest frame
    /// holds), and the stream still decodes.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "64 KiB through the CRC and Adler-32 take Miri about a minute; safe arithmetic only"
    )]
    fn long_data_is_split_into_stored_blocks() {
        let raw: Vec<u8> = (0..150_000u32).map(|i| (i % 251) as u8).collect();
        let mut out = Vec::new();
        let mut sink = |b: &[u8]| out.extend_from_slice(b);
        let blocks = raw.len().div_ceil(STORED_MAX);
        let chunk = Chunk::start(&mut sink, *b"IDAT", ZLIB + blocks * 5 + raw.len());
        let mut z = Stored::start(chunk, raw.len());
        for piece in raw.chunks(7) {
            z.write(piece);
        }
        z.finish();
        // The chunk's data (after length and type, before the CRC) is a zlib stream.
        let zlib = &out[8..out.len() - 4];
        assert_eq!(zlib.len(), ZLIB + blocks * 5 + raw.len());
        // Read back as RFC 1950/1951 say: the header, stored blocks up to the final one (each
        // `LEN` with its complement `NLEN`), the Adler-32 of what they hold.
        assert_eq!(zlib[..2], [0x78, 0x01]);
        assert_eq!(u16::from_be_bytes([0x78, 0x01]) % 31, 0);
        let (mut at, mut decoded, mut seen) = (2, Vec::new(), 0);
        loop {
            let header = &zlib[at..at + 5];
            let len = usize::from(u16::from_le_bytes([header[1], header[2]]));
            assert_eq!(
                u16::from_le_bytes([header[3], header[4]]),
                !u16::from_le_bytes([header[1], header[2]])
            );
            decoded.extend_from_slice(&zlib[at + 5..at + 5 + len]);
            at += 5 + len;
            seen += 1;
            if header[0] == 1 {
                break;
            }
            assert_eq!(header[0], 0);
        }
        assert_eq!(seen, blocks);
        assert_eq!(decoded, raw);
        assert_eq!(zlib[at..], adler(&raw).to_be_bytes());
        assert_eq!(
            u32::from_be_bytes(out[out.len() - 4..].try_into().unwrap()),
            crc(&out[4..out.len() - 4])
        );
    }
}
