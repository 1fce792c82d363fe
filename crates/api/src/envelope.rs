use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::ApiError;

/// The main interface's envelope: `code` equals the HTTP status, `message` is "success" on
/// success, `data` the payload (null on error unless it lists field errors).
#[derive(Debug, Serialize, ToSchema)]
pub struct Envelope<T> {
    pub code: u16,
    pub message: String,
    pub data: Option<T>,
}

pub type ApiResult = Result<HttpResponse, ApiError>;

/// 200 with `data`.
pub fn ok<T: Serialize>(data: T) -> ApiResult {
    Ok(respond(StatusCode::OK, StatusCode::OK.as_u16(), "success", Some(data)))
}

pub(crate) fn respond<T: Serialize>(status: StatusCode, code: u16, message: &str, data: Option<T>) -> HttpResponse {
    HttpResponse::build(status).json(Envelope { code, message: message.to_owned(), data })
}
