//! TLS for the reqwest transport: the platform's certificate verifier, built on the first
//! handshake instead of with the client.
//!
//! Building reqwest's default client loads every certificate of the system store (about 5 ms
//! of CPU, a third of `session run`'s start-up) even when the provider is a plain
//! `http://` server that never needs them. The verifier below is the same
//! `rustls-platform-verifier` that reqwest would use, with the same crypto provider; only
//! the moment its roots are read changes.

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// A rustls client configuration for HTTP/1.1 whose verifier reads the platform's roots on
/// the first handshake.
pub(crate) fn lazy_platform_config() -> Result<rustls::ClientConfig, rustls::Error> {
    let provider = CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
    let verifier = Arc::new(LazyPlatformVerifier { provider: provider.clone(), verifier: OnceLock::new() });
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    // What reqwest sets for a client without its `http2` feature.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// `rustls_platform_verifier::Verifier`, made when a certificate first needs checking.
#[derive(Debug)]
struct LazyPlatformVerifier {
    provider: Arc<CryptoProvider>,
    /// The verifier, or why the platform's roots could not be read (kept: every handshake
    /// then fails with it, as the eager client would have failed to build).
    verifier: OnceLock<Result<rustls_platform_verifier::Verifier, String>>,
}

impl LazyPlatformVerifier {
    fn verifier(&self) -> Result<&rustls_platform_verifier::Verifier, rustls::Error> {
        self.verifier
            .get_or_init(|| {
                rustls_platform_verifier::Verifier::new(self.provider.clone())
                    .map_err(|error| error.to_string())
            })
            .as_ref()
            .map_err(|error| {
                rustls::Error::General(format!("cannot load the platform's certificates: {error}"))
            })
    }
}

impl ServerCertVerifier for LazyPlatformVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verifier()?.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier()?.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier()?.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        // The platform verifier answers from the provider's algorithms; so does this, without
        // reading the roots (rustls asks while it writes the ClientHello).
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_roots_are_not_read_until_a_certificate_is_checked() {
        let config = lazy_platform_config().expect("a TLS configuration");
        assert_eq!(config.alpn_protocols, [b"http/1.1".to_vec()]);
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let verifier = LazyPlatformVerifier { provider, verifier: OnceLock::new() };
        assert!(!verifier.supported_verify_schemes().is_empty());
        assert!(verifier.verifier.get().is_none(), "listing the schemes reads no roots");
        let garbage = CertificateDer::from(vec![0u8; 8]);
        let name = ServerName::try_from("example.com").expect("a name");
        let result = verifier.verify_server_cert(&garbage, &[], &name, &[], UnixTime::now());
        assert!(result.is_err(), "a certificate that is not DER is refused");
        assert!(verifier.verifier.get().is_some(), "the first check built the verifier");
    }
}
