//! Z85 (Spark's `Base85Codec`) encoding, as used by deletion-vector descriptors.
//!
//! Spark pads input with zero bytes to a multiple of 4 and encodes every block; decoders take
//! a multiple of 5 characters and the caller trims to the known length. The `z85` crate's own
//! padding scheme is incompatible with Spark, hence this small codec.

const ALPHABET: &[u8; 85] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

fn decode_table() -> [u8; 256] {
    let mut t = [0xFFu8; 256];
    for (i, &c) in ALPHABET.iter().enumerate() {
        t[c as usize] = i as u8;
    }
    t
}

/// Encodes bytes, zero-padding the input to a multiple of 4.
pub(crate) fn encode(input: &[u8]) -> String {
    let mut out = String::with_capacity(input.len().div_ceil(4) * 5);
    for chunk in input.chunks(4) {
        let mut block = [0u8; 4];
        block[..chunk.len()].copy_from_slice(chunk);
        let mut v = u32::from_be_bytes(block);
        let mut digits = [0u8; 5];
        for d in digits.iter_mut().rev() {
            *d = ALPHABET[(v % 85) as usize];
            v /= 85;
        }
        out.extend(digits.iter().map(|&b| b as char));
    }
    out
}

/// Decodes a string whose length is a multiple of 5.
///
/// # Errors
/// A message when the length is wrong, a character is outside the alphabet, or a block
/// overflows 32 bits.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn decode(input: &str) -> Result<Vec<u8>, String> {
    let bytes = input.as_bytes();
    if !bytes.len().is_multiple_of(5) {
        return Err(format!("z85 length {} is not a multiple of 5", bytes.len()));
    }
    let table = decode_table();
    let mut out = Vec::with_capacity(bytes.len() / 5 * 4);
    for chunk in bytes.chunks(5) {
        let mut v: u64 = 0;
        for &c in chunk {
            let d = table[c as usize];
            if d == 0xFF {
                return Err(format!("character {:?} is not z85", c as char));
            }
            v = v * 85 + u64::from(d);
        }
        let v = u32::try_from(v).map_err(|_| "z85 block overflows 32 bits".to_string())?;
        out.extend_from_slice(&v.to_be_bytes());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_vectors_from_the_digest() {
        let uuid = hex::decode("61d16c75699446b7a15b8b538852e50e").unwrap();
        assert_eq!(encode(&uuid), "vBn[lx{q8@P<9BNH/isA");
        assert_eq!(decode("vBn[lx{q8@P<9BNH/isA").unwrap(), uuid);
        let uuid = hex::decode("d2c639aa8816431aaaf6d3fe2512ff61").unwrap();
        assert_eq!(encode(&uuid), "^-aqEH.-t@S}K{vb[*k^");
    }

    #[test]
    fn rejects_bad_input() {
        assert!(decode("abcd").is_err());
        assert!(decode("abc d").is_err());
        assert!(decode("#####").is_err());
    }
}
