//! Who the other end of a connection is before any request [sync]: whether it came over TLS,
//! and the common name of the client certificate it presented, once rustls verified the
//! certificate against `tls_client_ca`. That name is the connection's principal, as Kafka
//! maps `CN=alice` to `User:alice` by default.
//!
//! The name is read from the certificate's subject with a small DER walk (certificate →
//! to-be-signed → the subject after version, serial, signature algorithm, issuer and
//! validity): the first common name of the subject, UTF-8, printable or IA5 text. A
//! certificate whose subject has none (or does not parse) authenticates nobody.

/// What a connection is, as far as the transport tells.
#[derive(Debug, Clone, Default)]
pub(crate) struct Identity {
    pub tls: bool,
    /// The verified client certificate's common name.
    pub certificate: Option<String>,
}

/// One DER element: its tag, its contents, and what follows it.
fn element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
/// id-at-commonName, 2.5.4.3.
const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];

/// The first common name of a DER certificate's subject.
pub(crate) fn common_name(certificate: &[u8]) -> Option<String> {
    let (SEQUENCE, cert, _) = element(certificate)? else { return None };
    let (SEQUENCE, tbs, _) = element(cert)? else { return None };
    let mut rest = tbs;
    // The explicit [0] version is optional.
    if rest.first() == Some(&0xA0) {
        rest = element(rest)?.2;
    }
    // serial, signature algorithm, issuer, validity: skipped; then the subject.
    for _ in 0..4 {
        rest = element(rest)?.2;
    }
    let (SEQUENCE, mut names, _) = element(rest)? else { return None };
    while let Some((SET, set, next)) = element(names) {
        let mut attributes = set;
        while let Some((SEQUENCE, attribute, after)) = element(attributes) {
            if let Some((OID, oid, value)) = element(attribute) {
                if oid == COMMON_NAME {
                    let (tag, text, _) = element(value)?;
                    // UTF8String, PrintableString, IA5String.
                    return matches!(tag, 0x0C | 0x13 | 0x16)
                        .then(|| std::str::from_utf8(text).ok().map(str::to_string))?;
                }
            }
            attributes = after;
        }
        names = next;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certificate(cn: Option<&str>, issuer: &str) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::new(vec!["client.local".to_string()]).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(rcgen::DnType::OrganizationName, "deltabus tests");
        if let Some(cn) = cn {
            params.distinguished_name.push(rcgen::DnType::CommonName, cn);
        }
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(rcgen::DnType::CommonName, issuer);
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
        let _ = ca;
        params.signed_by(&key, &issuer).unwrap().der().to_vec()
    }

    #[test]
    fn the_subjects_common_name_not_the_issuers() {
        assert_eq!(common_name(&certificate(Some("alice"), "Test CA")).as_deref(), Some("alice"));
        assert_eq!(common_name(&certificate(Some("Zürich ops ☃"), "CA")).as_deref(), Some("Zürich ops ☃"));
        assert_eq!(common_name(&certificate(None, "Some CA")), None, "the issuer's name is not the client's");
        assert_eq!(common_name(b"not DER"), None);
        assert_eq!(common_name(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
        let good = certificate(Some("bob"), "CA");
        for cut in [1, good.len() / 2, good.len() - 1] {
            let _ = common_name(&good[..cut]);
        }
    }
}
