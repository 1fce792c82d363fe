use actix_web::web;
use serde::Serialize;
use utoipa::ToSchema;

use crate::app::AppState;
use crate::envelope::{ApiResult, ok};

#[derive(Serialize, ToSchema)]
pub struct Health {
    /// "ok" once the database answers.
    pub status: &'static str,
}

/// Liveness and readiness: 200 with `status: "ok"` once the database answers, else 500.
#[utoipa::path(get, path = "/healthz", tag = "health", responses((status = 200, body = Health)))]
pub async fn healthz(state: web::Data<AppState>) -> ApiResult {
    state.health.check().await?;
    ok(Health { status: "ok" })
}
