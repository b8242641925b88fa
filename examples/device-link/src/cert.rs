//! What a device can say of a certificate it refused, read from its DER without a parser of
//! its own beyond the few fields needed: [`is_self_issued`].
//!
//! Every byte is the server's: the reading stops at the first thing that is not as expected and
//! answers `false`; nothing here panics or reads beyond the input.

/// One DER element read from the start of some bytes.
struct Element<'a> {
    tag: u8,
    /// The whole element: tag, length and content.
    whole: &'a [u8],
    /// Its content.
    content: &'a [u8],
    /// What follows it.
    rest: &'a [u8],
}

/// The DER element at the start of `der`. Lengths are definite (DER), at most four bytes long.
fn element(der: &[u8]) -> Option<Element<'_>> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let (bytes, rest) = rest.split_at_checked(n)?;
        let len = bytes
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, rest)
    };
    let (content, after) = rest.split_at_checked(len)?;
    let whole = der.get(..der.len() - after.len())?;
    Some(Element {
        tag,
        whole,
        content,
        rest: after,
    })
}

/// `true` when the X.509 certificate `der` names itself as its issuer (its `issuer` and
/// `subject` are the same bytes): a self-signed certificate, which no root vouches for. A
/// device that refused it says "unknown issuer (self-signed)" rather than whatever a root of
/// the same name made of its signature. `false` for anything that is not such a certificate.
pub fn is_self_issued(der: &[u8]) -> bool {
    self_issued(der).unwrap_or(false)
}

fn self_issued(der: &[u8]) -> Option<bool> {
    const SEQUENCE: u8 = 0x30;
    let cert = element(der).filter(|e| e.tag == SEQUENCE)?;
    let tbs = element(cert.content).filter(|e| e.tag == SEQUENCE)?;
    // [0] version (optional), serialNumber, signature, issuer, validity, subject.
    let mut field = element(tbs.content)?;
    if field.tag == 0xa0 {
        field = element(field.rest)?;
    }
    let signature = element(field.rest)?;
    let issuer = element(signature.rest).filter(|e| e.tag == SEQUENCE)?;
    let validity = element(issuer.rest)?;
    let subject = element(validity.rest).filter(|e| e.tag == SEQUENCE)?;
    Some(issuer.whole == subject.whole)
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "a test")]
    use super::*;

    fn der(pem_path: &std::path::Path) -> Vec<u8> {
        let pem = std::fs::read_to_string(pem_path).unwrap();
        let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        decode_base64(&b64)
    }

    fn decode_base64(s: &str) -> Vec<u8> {
        let val = |c: u8| match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            _ => 63,
        };
        let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=').map(val).collect();
        let mut out = Vec::new();
        for chunk in bytes.chunks(4) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (18 - 6 * i)));
            out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
        }
        out
    }

    #[test]
    fn a_self_signed_certificate_names_itself_and_an_issued_one_does_not() {
        let ca = mqtt_fleet::certs::TestCa::new("cert-test").unwrap();
        let own = ca.self_signed("own", &["localhost"]).unwrap();
        let issued = ca
            .issue("issued", &["localhost"], mqtt_fleet::certs::Validity::Now)
            .unwrap();
        assert!(is_self_issued(&der(&own.cert)));
        assert!(is_self_issued(&der(&ca.pem)), "a root is self-issued too");
        let issued = der(&issued.cert);
        assert!(!is_self_issued(&issued));
        // Cut anywhere, or not a certificate at all: never a panic, never `true`.
        for n in 0..issued.len() {
            assert!(!is_self_issued(&issued[..n]));
        }
        for bad in [
            &[][..],
            &[0x30],
            &[0x30, 0x84, 0xff, 0xff, 0xff, 0xff],
            &[0x30, 0x85],
        ] {
            assert!(!is_self_issued(bad));
        }
    }
}
