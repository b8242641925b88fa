//! The footprint baseline (feature `_footprint-baseline`, built only by `examples/footprint.sh`):
//! the same board and the same mcp-hal drivers, driven by a one-letter line protocol instead of
//! MCP (`v40` volume, `b80` brightness, `r1` relay, `x` reboot; answers `ok`/`err`). The
//! difference between this image and the real firmware is what MCP costs in flash: mcp-core, the
//! tool kits, and the JSON and number code they bring.

use esp_hal::system::software_reset;
use mcp_hal::Percent;
use mcp_hal::audio::AudioCodec;
use mcp_hal::backlight::Backlight;
use mcp_hal::kits::DelayNs;
use mcp_hal::switch::Switch;
use mcp_hal::system::System;

use crate::Usb;
use crate::board::Board;

fn number(digits: &[u8]) -> u32 {
    digits
        .iter()
        .filter(|b| b.is_ascii_digit())
        .fold(0u32, |n, b| {
            n.saturating_mul(10).saturating_add(u32::from(b - b'0'))
        })
}

fn command(board: &mut Board, line: &[u8]) -> bool {
    let (op, rest) = match line.split_first() {
        Some((op, rest)) => (*op, rest),
        None => return false,
    };
    let arg = number(rest);
    let percent = u8::try_from(arg).ok().and_then(Percent::new);
    match (op, percent) {
        (b'v', Some(p)) => board.codec.set_volume(p).is_ok() && board.codec.volume() == Ok(p),
        (b'b', Some(p)) => board.screen.set_brightness(p).is_ok(),
        (b'r', _) => {
            let on = arg != 0;
            // Like the relay kit: wait out the settle time for the feedback to agree.
            let mut waited = 0;
            board.relay.set(on).is_ok()
                && loop {
                    let agrees = board.relay.feedback() == Ok(Some(on));
                    if agrees || waited >= board.relay.settle_ms() {
                        break agrees;
                    }
                    board.delay.delay_ms(5);
                    waited += 5;
                }
        }
        (b'x', _) => board.system.schedule_reboot(1000).is_ok(),
        _ => false,
    }
}

/// Serves the line protocol forever.
pub fn serve(mut board: Board, mut usb: Usb) -> ! {
    let mut line = [0u8; 64];
    let mut len = 0usize;
    loop {
        if board.system.reboot_due() {
            crate::flush(&mut usb);
            software_reset();
        }
        while let Ok(byte) = usb.read_byte() {
            if byte != b'\n' {
                if let Some(slot) = line.get_mut(len) {
                    *slot = byte;
                    len += 1;
                }
                continue;
            }
            let ok = command(&mut board, line.get(..len).unwrap_or_default());
            crate::send(&mut usb, if ok { b"ok" } else { b"err" });
            len = 0;
        }
    }
}
