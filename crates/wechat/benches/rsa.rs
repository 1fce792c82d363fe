//! One RSA-2048 SHA256withRSA signature with the merchant key (what each pay platform request
//! and each `paySign` costs) and one verification of a platform signature (what each answer
//! and each notification costs), through the vendored OpenSSL.
//!
//! `cargo bench -p atrium-wechat --bench rsa`
use atrium_payments::PlatformKey;
use atrium_wechat::pay::sign::{MerchantSigner, PlatformVerifier, SignedHeaders, answer_message, request_message};
use base64::Engine;
use criterion::{Criterion, criterion_group, criterion_main};
use openssl::hash::MessageDigest;
use openssl::pkey::PKey;
use openssl::sign::Signer;
use std::hint::black_box;

const MERCHANT_KEY: &str = include_str!("../tests/fixtures/pay/merchant_key.pem");
const PLATFORM_KEY: &str = include_str!("../tests/fixtures/pay/platform_key.pem");
const PLATFORM_PUBLIC: &str = include_str!("../tests/fixtures/pay/platform_public.pem");
const BODY: &str = r#"{"appid":"wxd678efh567hg6787","mchid":"1230000109","description":"Image形象店-深圳腾大-QQ公仔","out_trade_no":"1217752501201407033233368018","notify_url":"https://www.weixin.qq.com/wxpay/pay.php","amount":{"total":100,"currency":"CNY"},"payer":{"openid":"oUpF8uMuAJO_M2pxb1Q9zNjWeS6o"}}"#;

fn rsa(c: &mut Criterion) {
    let signer = MerchantSigner::from_pem(MERCHANT_KEY).expect("fixture key");
    let message = request_message("POST", "/v3/pay/transactions/jsapi", 1_554_208_460, "593BEC0C930BF1AFEB40B4A08C8FB242", BODY);
    c.bench_function("rsa2048_sign_request", |b| b.iter(|| signer.sign(black_box(&message)).expect("signs")));

    // An answer signed by the platform, verified as the client and the notify route do.
    let (timestamp, nonce) = ("1554208460", "593BEC0C930BF1AFEB40B4A08C8FB242");
    let platform = PKey::private_key_from_pem(PLATFORM_KEY.as_bytes()).expect("fixture key");
    let mut platform_signer = Signer::new(MessageDigest::sha256(), &platform).expect("signer");
    platform_signer.update(&answer_message(timestamp, nonce, BODY.as_bytes())).expect("update");
    let signature = base64::engine::general_purpose::STANDARD.encode(platform_signer.sign_to_vec().expect("signs"));
    let id = "PUB_KEY_ID_0114232134912410000000000000000000".to_owned();
    let verifier = PlatformVerifier::new(&[PlatformKey { id: id.clone(), pem: PLATFORM_PUBLIC.into() }]).expect("fixture key");
    let headers = SignedHeaders { timestamp: timestamp.into(), nonce: nonce.into(), signature, serial: id };
    c.bench_function("rsa2048_verify_answer", |b| {
        b.iter(|| verifier.verify(black_box(&headers), black_box(BODY.as_bytes()), 1_554_208_460).expect("verifies"))
    });
}

criterion_group!(benches, rsa);
criterion_main!(benches);
