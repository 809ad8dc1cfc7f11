//! SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), the server side [sync].
//!
//! Passwords are never kept: at start each user's password becomes, per mechanism, a random
//! salt, the iteration count (4096, Kafka's minimum), `StoredKey = H(HMAC(SaltedPassword,
//! "Client Key"))` and `ServerKey = HMAC(SaltedPassword, "Server Key")`. An exchange is two
//! client messages:
//! 1. `n,,n=<user>,r=<client nonce>` → `r=<client nonce><server nonce>,s=<salt>,i=4096`;
//! 2. `c=biws,r=<nonce>,p=<proof>` → `v=<server signature>` when the proof holds.
//!
//! An unknown user gets a salt like any other (made from the name, so the same each time) and
//! fails at the proof, so the first answer does not tell who exists. Channel binding is not
//! offered (`n` or `y` only).

use std::collections::HashMap;
use std::num::NonZeroU32;

use aws_lc_rs::{digest, hmac, pbkdf2};
use base64::Engine as _;

const ITERATIONS: u32 = 4096;
const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// A SCRAM mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) enum Mechanism {
    Sha256,
    Sha512,
}

impl Mechanism {
    /// The mechanism a SASL handshake names (`SCRAM-SHA-256`, `SCRAM-SHA-512`).
    pub(crate) fn named(name: &str) -> Option<Mechanism> {
        match name {
            "SCRAM-SHA-256" => Some(Mechanism::Sha256),
            "SCRAM-SHA-512" => Some(Mechanism::Sha512),
            _ => None,
        }
    }

    fn algorithms(self) -> (pbkdf2::Algorithm, hmac::Algorithm, &'static digest::Algorithm) {
        match self {
            Mechanism::Sha256 => (pbkdf2::PBKDF2_HMAC_SHA256, hmac::HMAC_SHA256, &digest::SHA256),
            Mechanism::Sha512 => (pbkdf2::PBKDF2_HMAC_SHA512, hmac::HMAC_SHA512, &digest::SHA512),
        }
    }

    fn len(self) -> usize {
        match self {
            Mechanism::Sha256 => 32,
            Mechanism::Sha512 => 64,
        }
    }
}

/// What the server keeps of one user's password for one mechanism.
#[derive(Clone)]
struct Credential {
    salt: Vec<u8>,
    stored_key: Vec<u8>,
    server_key: Vec<u8>,
}

fn hmac_sign(alg: hmac::Algorithm, key: &[u8], data: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(alg, key), data).as_ref().to_vec()
}

impl Credential {
    fn new(m: Mechanism, password: &str, salt: Vec<u8>) -> Credential {
        let (kdf, mac, hash) = m.algorithms();
        let mut salted = vec![0u8; m.len()];
        let iterations = NonZeroU32::new(ITERATIONS).unwrap_or(NonZeroU32::MIN);
        pbkdf2::derive(kdf, iterations, &salt, password.as_bytes(), &mut salted);
        let client_key = hmac_sign(mac, &salted, b"Client Key");
        let stored_key = digest::digest(hash, &client_key).as_ref().to_vec();
        let server_key = hmac_sign(mac, &salted, b"Server Key");
        Credential { salt, stored_key, server_key }
    }
}

/// Every user's SCRAM credentials, made once at start.
#[derive(Clone, Default)]
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) struct ScramUsers {
    users: HashMap<(String, Mechanism), Credential>,
    /// Random bytes that make unknown users' salts.
    secret: Vec<u8>,
}

impl std::fmt::Debug for ScramUsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ScramUsers({})", self.users.len() / 2)
    }
}

fn random(n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    // A failing system RNG leaves zeros, which only weakens salts and nonces; it is not
    // expected on any platform deltabus runs on.
    let _ = aws_lc_rs::rand::fill(&mut out);
    out
}

impl ScramUsers {
    /// The credentials of `(user, password)` pairs for both mechanisms.
    pub(crate) fn new(users: &[(String, String)]) -> ScramUsers {
        let mut out = ScramUsers { users: HashMap::new(), secret: random(32) };
        for (user, password) in users {
            for m in [Mechanism::Sha256, Mechanism::Sha512] {
                out.users.insert((user.clone(), m), Credential::new(m, password, random(16)));
            }
        }
        out
    }

    /// Starts an exchange with the client's first message.
    ///
    /// # Errors
    /// Why the message is refused (the client is told authentication failed).
    pub(crate) fn first(&self, m: Mechanism, message: &[u8]) -> Result<(Exchange, Vec<u8>), String> {
        let text = std::str::from_utf8(message).map_err(|_| "a SCRAM message is UTF-8".to_string())?;
        let (gs2, bare) = match text.split_once(',').and_then(|(cb, rest)| Some((cb, rest.split_once(',')?))) {
            Some((cb @ ("n" | "y"), (_authzid, bare))) => (format!("{cb},{_authzid},"), bare.to_string()),
            Some(_) => return Err("channel binding is not offered".into()),
            None => return Err("not a SCRAM client-first message".into()),
        };
        let attr = |key: &str| bare.split(',').find_map(|a| a.strip_prefix(key)).map(str::to_string);
        let user = attr("n=").ok_or("the client-first message names no user")?;
        let user = user.replace("=2C", ",").replace("=3D", "=");
        let client_nonce = attr("r=").filter(|r| !r.is_empty()).ok_or("the client-first message has no nonce")?;
        let credential = match self.users.get(&(user.clone(), m)) {
            Some(c) => c.clone(),
            // Unknown: a salt made from the name, and keys no proof matches.
            None => {
                let salt = hmac_sign(hmac::HMAC_SHA256, &self.secret, user.as_bytes())[..16].to_vec();
                Credential { salt, stored_key: random(m.len()), server_key: random(m.len()) }
            }
        };
        let nonce = format!("{client_nonce}{}", B64.encode(random(18)));
        let server_first = format!("r={nonce},s={},i={ITERATIONS}", B64.encode(&credential.salt));
        let exchange =
            Exchange { mechanism: m, user, gs2, nonce, auth_prefix: format!("{bare},{server_first}"), credential };
        Ok((exchange, server_first.into_bytes()))
    }
}

/// An exchange after the server's first answer.
pub(crate) struct Exchange {
    mechanism: Mechanism,
    pub user: String,
    gs2: String,
    nonce: String,
    /// `client-first-bare,server-first`, the start of the AuthMessage.
    auth_prefix: String,
    credential: Credential,
}

impl std::fmt::Debug for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange").field("mechanism", &self.mechanism).field("user", &self.user).finish()
    }
}

impl Exchange {
    /// Checks the client's final message; the server's final message when its proof holds.
    ///
    /// # Errors
    /// Why it does not (the client is told authentication failed).
    pub(crate) fn last(&self, message: &[u8]) -> Result<Vec<u8>, String> {
        let text = std::str::from_utf8(message).map_err(|_| "a SCRAM message is UTF-8".to_string())?;
        let (without_proof, proof) = text.rsplit_once(",p=").ok_or("the client-final message has no proof")?;
        let attr = |key: &str| without_proof.split(',').find_map(|a| a.strip_prefix(key));
        if attr("c=") != Some(B64.encode(self.gs2.as_bytes()).as_str()) {
            return Err("the channel binding does not match the first message".into());
        }
        if attr("r=") != Some(self.nonce.as_str()) {
            return Err("the nonce does not match".into());
        }
        let proof = B64.decode(proof).map_err(|_| "the proof is not base64".to_string())?;
        let (_, mac, hash) = self.mechanism.algorithms();
        let auth_message = format!("{},{without_proof}", self.auth_prefix);
        let signature = hmac_sign(mac, &self.credential.stored_key, auth_message.as_bytes());
        if proof.len() != signature.len() {
            return Err("wrong password".into());
        }
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
        let stored = digest::digest(hash, &client_key);
        let same = stored.as_ref().iter().zip(&self.credential.stored_key).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0;
        if !same {
            return Err("wrong password".into());
        }
        let server_signature = hmac_sign(mac, &self.credential.server_key, auth_message.as_bytes());
        Ok(format!("v={}", B64.encode(server_signature)).into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client's side of the exchange, as RFC 5802 spells it.
    fn client(
        m: Mechanism,
        user: &str,
        password: &str,
        server_first: &[u8],
        client_first_bare: &str,
    ) -> (String, Vec<u8>) {
        let text = std::str::from_utf8(server_first).unwrap();
        let attr = |k: &str| text.split(',').find_map(|a| a.strip_prefix(k)).unwrap().to_string();
        let (nonce, salt, i) = (attr("r="), B64.decode(attr("s=")).unwrap(), attr("i=").parse::<u32>().unwrap());
        let (kdf, mac, hash) = m.algorithms();
        let mut salted = vec![0u8; m.len()];
        pbkdf2::derive(kdf, NonZeroU32::new(i).unwrap(), &salt, password.as_bytes(), &mut salted);
        let client_key = hmac_sign(mac, &salted, b"Client Key");
        let stored = digest::digest(hash, &client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth = format!("{client_first_bare},{text},{without_proof}");
        let signature = hmac_sign(mac, stored.as_ref(), auth.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
        let server_key = hmac_sign(mac, &salted, b"Server Key");
        let _ = user;
        (format!("{without_proof},p={}", B64.encode(proof)), hmac_sign(mac, &server_key, auth.as_bytes()))
    }

    #[test]
    fn both_mechanisms_accept_the_password_and_refuse_others() {
        let users = ScramUsers::new(&[("alice".into(), "pâss:wörd".into()), ("b,o=b".into(), "x".into())]);
        for m in [Mechanism::Sha256, Mechanism::Sha512] {
            for (user, spelled, password, ok) in [
                ("alice", "alice", "pâss:wörd", true),
                ("alice", "alice", "guess", false),
                ("b,o=b", "b=2Co=3Db", "x", true),
                ("nobody", "nobody", "x", false),
            ] {
                let bare = format!("n={spelled},r=fyko+d2lbbFgONRv9qkxdawL");
                let (exchange, server_first) = users.first(m, format!("n,,{bare}").as_bytes()).unwrap();
                assert_eq!(exchange.user, user);
                let (last, want) = client(m, user, password, &server_first, &bare);
                match exchange.last(last.as_bytes()) {
                    Ok(v) => {
                        assert!(ok, "{user} {password}");
                        assert_eq!(v, format!("v={}", B64.encode(want)).into_bytes());
                    }
                    Err(why) => assert!(!ok, "{user} {password}: {why}"),
                }
            }
        }
        // An unknown user's salt is the same each time: the first answer tells nothing.
        let salt = |u: &str| {
            let (_, first) = users.first(Mechanism::Sha256, format!("n,,n={u},r=abc").as_bytes()).unwrap();
            String::from_utf8(first).unwrap().split(',').nth(1).unwrap().to_string()
        };
        assert_eq!(salt("nobody"), salt("nobody"));
        assert!(users.first(Mechanism::Sha256, b"p=tls-unique,,n=a,r=x").is_err());
        assert!(users.first(Mechanism::Sha256, b"n,,r=x").is_err());
        let (exchange, _) = users.first(Mechanism::Sha256, b"n,,n=alice,r=x").unwrap();
        assert!(exchange.last(b"c=biws,r=wrong,p=AAAA").is_err());
        assert!(exchange.last(b"c=eSws,r=x,p=AAAA").is_err());
    }
}
