//! Health for machines: liveness (`/healthz/live`: the process answers) and readiness
//! (`/healthz/ready`, and `/healthz` as before: the database answers, its migrations are
//! applied, background job runners are alive). Neither needs authentication; neither says more
//! than ok or what is not ready.
use actix_web::web;
use serde::Serialize;
use utoipa::ToSchema;

use crate::app::AppState;
use crate::envelope::{ApiResult, ok};

#[derive(Serialize, ToSchema)]
pub struct Health {
    /// "ok".
    pub status: &'static str,
}

/// Readiness, as `/healthz/ready`.
#[utoipa::path(get, path = "/healthz", tag = "health",
    responses((status = 200, description = "Ready", body = Health),
              (status = 503, description = "Not ready: the database does not answer, migrations are pending or a job runner stopped; with Retry-After")))]
pub async fn healthz(state: web::Data<AppState>) -> ApiResult {
    ready(state).await
}

/// Liveness: 200 while the process serves HTTP at all; it never looks at the database, so a
/// database outage does not get every instance restarted.
#[utoipa::path(get, path = "/healthz/live", tag = "health", responses((status = 200, description = "The process answers", body = Health)))]
pub async fn live() -> ApiResult {
    ok(Health { status: "ok" })
}

/// Readiness: 200 when this instance can serve requests, else 503 with `Retry-After`; a load
/// balancer sends traffic only to ready instances.
#[utoipa::path(get, path = "/healthz/ready", tag = "health",
    responses((status = 200, description = "Ready", body = Health),
              (status = 503, description = "Not ready: the database does not answer, migrations are pending or a job runner stopped; with Retry-After")))]
pub async fn ready(state: web::Data<AppState>) -> ApiResult {
    state.health.ready().await?;
    ok(Health { status: "ok" })
}
