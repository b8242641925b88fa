//! SNTP (RFC 4330): the time a device without a battery-backed clock needs before it can check
//! a certificate's dates. [`request`] makes the 48-byte client packet, [`Reply::parse`] checks the
//! server's answer to it; the UDP socket is the firmware's.
//!
//! The answer is accepted only when it is a server's (mode 4) reply, synchronized (stratum
//! 1–15, leap indicator not "alarm"), to *this* request: its originate timestamp must echo the
//! transmit timestamp of the request, which the device draws at random, so an off-path sender
//! cannot slip a time in. SNTP is not authenticated: a machine on the path can still lie, which
//! is why a firmware also refuses any time before its own build ([`Reply::unix_secs`] with a
//! floor).

/// The length of an SNTP packet without extensions.
pub const PACKET: usize = 48;
/// The SNTP port.
pub const PORT: u16 = 123;

/// Seconds between 1900-01-01 (NTP's epoch) and 1970-01-01.
const NTP_TO_UNIX: u64 = 2_208_988_800;

/// The client request: version 4, mode 3 (client), `nonce` as its transmit timestamp (the
/// server copies it into its reply's originate timestamp).
pub fn request(nonce: u64) -> [u8; PACKET] {
    let mut p = [0u8; PACKET];
    // LI 0, VN 4, mode 3.
    if let Some(first) = p.first_mut() {
        *first = 0x23;
    }
    if let Some(t) = p.get_mut(40..48) {
        t.copy_from_slice(&nonce.to_be_bytes());
    }
    p
}

/// Why a reply is not used. No variant holds data from the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplyError {
    /// Shorter than [`PACKET`].
    Short,
    /// Not a server's reply (mode 4), or an unsupported version.
    NotAServer,
    /// The server is not synchronized (stratum 0 — a kiss-o'-death — or ≥ 16, or the leap
    /// indicator says "alarm").
    Unsynchronized,
    /// The reply does not answer our request (its originate timestamp is not our nonce).
    NotOurs,
    /// The time is before the floor (the firmware's build) or not a plausible time.
    TooEarly,
}

/// A checked SNTP reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// The server's transmit time, seconds since 1970-01-01 UTC.
    pub unix_secs: u64,
}

impl Reply {
    /// Checks `packet` as the reply to the request made with `nonce`; `floor` is the earliest
    /// believable time (seconds since 1970; a firmware passes its build time).
    ///
    /// # Errors
    /// See [`ReplyError`].
    pub fn parse(packet: &[u8], nonce: u64, floor: u64) -> Result<Reply, ReplyError> {
        let head: &[u8; PACKET] = packet
            .get(..PACKET)
            .and_then(|p| p.try_into().ok())
            .ok_or(ReplyError::Short)?;
        let [b0, stratum, ..] = *head;
        let (leap, version, mode) = (b0 >> 6, (b0 >> 3) & 7, b0 & 7);
        if mode != 4 || !(3..=4).contains(&version) {
            return Err(ReplyError::NotAServer);
        }
        if leap == 3 || stratum == 0 || stratum >= 16 {
            return Err(ReplyError::Unsynchronized);
        }
        let word = |at: usize| {
            let mut b = [0u8; 8];
            if let Some(s) = head.get(at..at + 8) {
                b.copy_from_slice(s);
            }
            u64::from_be_bytes(b)
        };
        if word(24) != nonce {
            return Err(ReplyError::NotOurs);
        }
        let ntp_secs = word(40) >> 32;
        // NTP era 0 ends in 2036; a reply past it wraps to small values, counted in era 1.
        let ntp_secs = if ntp_secs < NTP_TO_UNIX {
            ntp_secs + (1 << 32)
        } else {
            ntp_secs
        };
        let unix_secs = ntp_secs - NTP_TO_UNIX;
        if unix_secs < floor {
            return Err(ReplyError::TooEarly);
        }
        Ok(Reply { unix_secs })
    }
}

#[cfg(test)]
mod test {
    #![allow(clippy::indexing_slicing, reason = "a test")]

    use super::*;

    /// A server's reply to `nonce` with transmit time `unix` (seconds since 1970).
    fn reply(nonce: u64, unix: u64) -> [u8; PACKET] {
        let mut p = [0u8; PACKET];
        p[0] = 0x24; // LI 0, VN 4, mode 4
        p[1] = 2;
        p[24..32].copy_from_slice(&nonce.to_be_bytes());
        p[40..44].copy_from_slice(&((unix + NTP_TO_UNIX) as u32).to_be_bytes());
        p
    }

    const NOW: u64 = 1_796_000_000; // 2026-11
    const BUILD: u64 = 1_790_000_000;

    #[test]
    fn a_reply_to_our_request_gives_the_time() {
        let req = request(0x1234_5678_9abc_def0);
        assert_eq!(req[0], 0x23);
        assert_eq!(&req[40..], &0x1234_5678_9abc_def0u64.to_be_bytes());
        let r = Reply::parse(
            &reply(0x1234_5678_9abc_def0, NOW),
            0x1234_5678_9abc_def0,
            BUILD,
        );
        assert_eq!(r, Ok(Reply { unix_secs: NOW }));
    }

    #[test]
    fn replies_that_are_not_ours_or_not_believable_are_refused() {
        let n = 42;
        assert_eq!(
            Reply::parse(&reply(n, NOW)[..47], n, BUILD),
            Err(ReplyError::Short)
        );
        assert_eq!(
            Reply::parse(&reply(n + 1, NOW), n, BUILD),
            Err(ReplyError::NotOurs)
        );
        assert_eq!(
            Reply::parse(&reply(n, BUILD - 1), n, BUILD),
            Err(ReplyError::TooEarly)
        );
        let mut p = reply(n, NOW);
        p[0] = 0x23; // a client's packet
        assert_eq!(Reply::parse(&p, n, BUILD), Err(ReplyError::NotAServer));
        let mut p = reply(n, NOW);
        p[1] = 0; // kiss-o'-death
        assert_eq!(Reply::parse(&p, n, BUILD), Err(ReplyError::Unsynchronized));
        let mut p = reply(n, NOW);
        p[0] |= 0xC0; // alarm
        assert_eq!(Reply::parse(&p, n, BUILD), Err(ReplyError::Unsynchronized));
    }

    #[test]
    fn times_after_2036_count_in_the_next_era() {
        // 2040-01-01: past NTP era 0's end (2036-02-07).
        let unix = 2_208_988_800u64;
        let mut p = reply(7, 0);
        let ntp = (unix + NTP_TO_UNIX) - (1 << 32);
        p[40..44].copy_from_slice(&(ntp as u32).to_be_bytes());
        assert_eq!(Reply::parse(&p, 7, BUILD), Ok(Reply { unix_secs: unix }));
    }
}
