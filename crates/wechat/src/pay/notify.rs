//! Notifications from the pay platform: the signature over the raw body, then the resource,
//! decrypted with AEAD_AES_256_GCM under the 32-byte APIv3 key (the tag is the last 16 bytes
//! of the base64 ciphertext), then parsed.
use super::answers::{RefundAnswer, ShareNotice, TransactionAnswer};
use super::sign::{PlatformVerifier, SignedHeaders, VerifyError};
use atrium_payments::{EventResource, MerchantAccount, NotificationError, NotificationRequest, PayEvent};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use openssl::symm::{Cipher, decrypt_aead};
use serde::Deserialize;

const TAG_LEN: usize = 16;

#[derive(Deserialize)]
struct Envelope {
    id: String,
    event_type: String,
    resource: Resource,
}

#[derive(Deserialize)]
struct Resource {
    algorithm: String,
    ciphertext: String,
    #[serde(default)]
    associated_data: String,
    nonce: String,
}

/// Decrypts a notification resource: `ciphertext_b64` is base64 of ciphertext ‖ 16-byte tag.
pub fn decrypt_resource(
    api_v3_key: &[u8],
    nonce: &[u8],
    associated_data: &[u8],
    ciphertext_b64: &str,
) -> Result<Vec<u8>, NotificationError> {
    if api_v3_key.len() != 32 || nonce.is_empty() {
        return Err(NotificationError::Undecryptable);
    }
    let data = STANDARD.decode(ciphertext_b64.as_bytes()).map_err(|_| NotificationError::Undecryptable)?;
    if data.len() < TAG_LEN {
        return Err(NotificationError::Undecryptable);
    }
    let (ciphertext, tag) = data.split_at(data.len() - TAG_LEN);
    decrypt_aead(Cipher::aes_256_gcm(), api_v3_key, Some(nonce), associated_data, ciphertext, tag)
        .map_err(|_| NotificationError::Undecryptable)
}

/// Verifies, decrypts and parses a notification for `account` at `now`.
pub fn open_notification(account: &MerchantAccount, request: &NotificationRequest, now: i64) -> Result<PayEvent, NotificationError> {
    let verifier = PlatformVerifier::new(&account.platform_keys).map_err(|e| not_configured(account, &e))?;
    open_with(&verifier, account, request, now)
}

/// The platform keys of `account` are unreadable: an operator's matter, logged as such.
pub(crate) fn not_configured(account: &MerchantAccount, why: &str) -> NotificationError {
    log::error!("payment notification for merchant {}: {why}", account.mchid);
    NotificationError::NotConfigured
}

/// As [`open_notification`], with the account's platform keys already read.
pub(crate) fn open_with(
    verifier: &PlatformVerifier,
    account: &MerchantAccount,
    request: &NotificationRequest,
    now: i64,
) -> Result<PayEvent, NotificationError> {
    let headers = SignedHeaders {
        timestamp: request.timestamp.clone(),
        nonce: request.nonce.clone(),
        signature: request.signature.clone(),
        serial: request.serial.clone(),
    };
    verifier.verify(&headers, &request.body, now).map_err(|e| match e {
        VerifyError::MissingHeaders => NotificationError::MissingHeaders,
        VerifyError::Probe => NotificationError::Probe,
        VerifyError::Stale => NotificationError::StaleTimestamp,
        VerifyError::UnknownSerial => NotificationError::UnknownSerial,
        VerifyError::BadSignature => NotificationError::BadSignature,
    })?;
    let envelope: Envelope = serde_json::from_slice(&request.body).map_err(|_| NotificationError::NotJson)?;
    if envelope.resource.algorithm != "AEAD_AES_256_GCM" {
        return Err(NotificationError::Undecryptable);
    }
    let plain = decrypt_resource(
        account.api_v3_key.expose().as_bytes(),
        envelope.resource.nonce.as_bytes(),
        envelope.resource.associated_data.as_bytes(),
        &envelope.resource.ciphertext,
    )?;
    let resource = if envelope.event_type.starts_with("TRANSACTION.") {
        let answer: TransactionAnswer = serde_json::from_slice(&plain).map_err(|_| NotificationError::NotJson)?;
        EventResource::Transaction(answer.into_report().map_err(|_| NotificationError::NotJson)?)
    } else if envelope.event_type.starts_with("REFUND.") {
        let answer: RefundAnswer = serde_json::from_slice(&plain).map_err(|_| NotificationError::NotJson)?;
        EventResource::Refund(answer.into_report().map_err(|_| NotificationError::NotJson)?)
    } else if envelope.event_type.starts_with("PROFITSHARING.") {
        let notice: ShareNotice = serde_json::from_slice(&plain).map_err(|_| NotificationError::NotJson)?;
        EventResource::Share { out_order_no: notice.out_order_no, transaction_id: notice.transaction_id }
    } else {
        EventResource::Other
    };
    Ok(PayEvent { id: envelope.id, event_type: envelope.event_type, resource })
}
