//! Partners against mocked ports.
use super::{actor, clock, quiet_access};
use crate::api::NewPartner;
use crate::ports::MockPartnerRepo;
use crate::service::PartnerService;
use atrium_kernel::{Error, Name, Party};
use std::sync::Arc;

#[tokio::test]
async fn only_platform_users_create_partners() {
    let mut repo = MockPartnerRepo::new();
    repo.expect_insert_partner().never();
    let svc = PartnerService::new(Arc::new(repo), quiet_access(), clock());
    let input = NewPartner { name: Name::parse("P").unwrap(), contact_name: None, phone: None, email: None, status: None };

    let err = svc.create(&actor(Party::Partner { partner_id: 1 }, &["*"]), input).await.unwrap_err();

    assert!(matches!(err, Error::Forbidden(..)));
}
