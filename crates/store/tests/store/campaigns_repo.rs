//! Contract tests of the release-campaign repository, on SQLite and PostgreSQL.
#![allow(clippy::unwrap_used)]
use atrium_kernel::{AuditRecord, Effects, Error, ListQuery, Party, Reason, StrEnum, Timestamp};
use atrium_miniprogram::campaign::{CampaignQuery, CampaignTenantQuery};
use atrium_miniprogram::*;
use atrium_org::*;
use atrium_store::schema::{audit_logs, mp_campaign_tenants, mp_campaigns};
use atrium_store::{CampaignStore, Db, FieldCipher, OrgStore, store_test};
use chrono::{Duration, TimeZone, Utc};
use diesel::prelude::*;
use std::sync::Arc;

fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).single().expect("valid") + Duration::microseconds(123_456)
}

fn at(minutes: i64) -> Timestamp {
    t0() + Duration::minutes(minutes)
}

struct Fixture {
    repo: CampaignStore,
    partner: i64,
    other_partner: i64,
    /// Eight tenants of `partner`, by id.
    tenants: Vec<i64>,
    /// A tenant of `other_partner`.
    stranger: i64,
}

async fn fixture(db: &Db) -> Fixture {
    let org = OrgStore::new(db.clone(), FieldCipher::new(&[9u8; 32]));
    let mut partners = vec![];
    for name in ["P", "Q"] {
        let p = Partner {
            id: 0,
            name: name.into(),
            contact_name: None,
            phone: None,
            email: None,
            status: PartnerStatus::Active,
            created_at: t0(),
            updated_at: t0(),
        };
        partners
            .push(org.insert_partner(p, Effects::audited(AuditRecord::system(t0(), "partner.create", "partner", None))).await.unwrap().id);
    }
    let mut tenants = vec![];
    for partner in [partners[0]; 8].into_iter().chain([partners[1]]) {
        let t = Tenant::draft(Some(partner), "T", t0());
        tenants.push(org.insert_tenant(t, Effects::audited(AuditRecord::system(t0(), "tenant.create", "tenant", None))).await.unwrap().id);
    }
    let stranger = tenants.pop().unwrap();
    Fixture { repo: CampaignStore::new(db.clone()), partner: partners[0], other_partner: partners[1], tenants, stranger }
}

fn campaign(partner_id: Option<i64>, name: &str, created_at: Timestamp) -> Campaign {
    Campaign {
        id: 0,
        name: name.into(),
        partner_id,
        status: CampaignStatus::Draft,
        template_id: 7,
        version: "2.0.0".into(),
        description: "Spring release".into(),
        version_desc: Some("for the reviewers".into()),
        ext_json: serde_json::json!({"extAppid": "{authorizer_appid}", "ext": {"tenant": "{tenant_id}", "n": 1}}),
        waves: vec![
            Wave {
                index: 0,
                percent: None,
                count: Some(2),
                release: WaveRelease::Gray { gray: 10 },
                status: WaveStatus::Waiting,
                tenants: 0,
            },
            Wave { index: 1, percent: Some(100), count: None, release: WaveRelease::Full, status: WaveStatus::Waiting, tenants: 0 },
        ],
        current_wave: None,
        auto_advance: true,
        max_rejections: 1,
        domains: Some(ServerDomains {
            requestdomain: vec!["https://api.example.com".into()],
            webviewdomain: vec!["https://h5.example.com".into()],
            ..Default::default()
        }),
        privacy: Some(PrivacySettings {
            owner_setting: PrivacyOwner {
                contact_email: Some("privacy@example.com".into()),
                notice_method: "popup".into(),
                ..Default::default()
            },
            setting_list: vec![PrivacyItem { privacy_key: "UserInfo".into(), privacy_text: "to greet you".into() }],
        }),
        paused_reason: None,
        tenant_total: 0,
        created_by: 42,
        created_at,
        started_at: None,
        finished_at: None,
        revision: 0,
    }
}

fn pending(tenant_id: i64) -> CampaignTenant {
    CampaignTenant {
        campaign_id: 0,
        tenant_id,
        authorizer_appid: Some(format!("wx{tenant_id}")),
        wave: None,
        status: CampaignTenantStatus::Pending,
        upload_task_id: None,
        audit_task_id: None,
        release_task_id: None,
        reason: None,
        errcode: None,
        attempts: 0,
        next_at: None,
        updated_at: t0(),
        revision: 0,
    }
}

fn create_audit() -> AuditRecord {
    AuditRecord::system(t0(), "miniprogram.campaign.create", "miniprogram_campaign", None)
}

/// Stores `c` naming `tenants` (in this order).
async fn insert(f: &Fixture, c: Campaign, tenants: &[i64]) -> Campaign {
    let rows = tenants.iter().map(|t| pending(*t)).collect();
    f.repo.insert_campaign(Campaign { tenant_total: tenants.len() as u32, ..c }, rows, Effects::audited(create_audit())).await.unwrap()
}

async fn get(f: &Fixture, id: i64) -> Campaign {
    f.repo.campaign(Party::Platform, id).await.unwrap().unwrap()
}

/// Writes `c` in `status` over the revision it holds.
async fn set_status(f: &Fixture, c: &Campaign, status: CampaignStatus) -> atrium_kernel::Result<bool> {
    let next = Campaign { status, ..c.clone() };
    f.repo.update_campaign(next, c.revision, Effects::none()).await
}

/// Every tenant of the campaign, by tenant id.
async fn tenants_of(f: &Fixture, id: i64) -> Vec<CampaignTenant> {
    let q = CampaignTenantQuery { list: ListQuery::parse(Some(1), Some(100), None, None).unwrap(), ..Default::default() };
    f.repo.campaign_tenants(Party::Platform, id, q).await.unwrap().items
}

async fn tenant_of(f: &Fixture, id: i64, tenant_id: i64) -> CampaignTenant {
    tenants_of(f, id).await.into_iter().find(|t| t.tenant_id == tenant_id).unwrap()
}

/// The campaign's tenants stored as active, by id.
fn active(db: &Db, campaign_id: i64) -> Vec<i64> {
    let mut conn = db.conn().unwrap();
    mp_campaign_tenants::table
        .filter(mp_campaign_tenants::campaign_id.eq(campaign_id))
        .filter(mp_campaign_tenants::active.eq(true))
        .order(mp_campaign_tenants::tenant_id)
        .select(mp_campaign_tenants::tenant_id)
        .load(&mut *conn)
        .unwrap()
}

fn audits(db: &Db, campaign_id: i64) -> Vec<String> {
    let mut conn = db.conn().unwrap();
    audit_logs::table
        .filter(audit_logs::target_type.eq("miniprogram_campaign"))
        .filter(audit_logs::target_id.eq(campaign_id))
        .order(audit_logs::id)
        .select(audit_logs::action)
        .load(&mut *conn)
        .unwrap()
}

fn assert_in_campaign(result: atrium_kernel::Result<impl std::fmt::Debug>, tenant_id: i64, campaign_id: i64) {
    match result {
        Err(Error::Conflict(Reason::TenantInCampaign, message)) => {
            assert_eq!(message, format!("tenant {tenant_id} is in campaign {campaign_id}, which is running or paused"));
        }
        other => panic!("expected tenant_in_campaign, got {other:?}"),
    }
}

fn ids(page: &atrium_kernel::Page<Campaign>) -> Vec<i64> {
    page.items.iter().map(|c| c.id).collect()
}

// --- campaigns --------------------------------------------------------------------------------

store_test!(a_campaign_round_trips_with_its_waves_domains_privacy_and_tenants, |db| {
    let f = fixture(&db).await;
    let t = &f.tenants;
    let c = insert(&f, campaign(Some(f.partner), "Spring", t0()), &[t[2], t[0], t[1]]).await;

    assert!(c.id > 0);
    assert_eq!(c, Campaign { id: c.id, tenant_total: 3, ..campaign(Some(f.partner), "Spring", t0()) });
    assert_eq!(get(&f, c.id).await, c);
    let bare = Campaign { domains: None, privacy: None, version_desc: None, waves: vec![], ..campaign(None, "Bare", t0()) };
    let bare = insert(&f, bare, &[t[3]]).await;
    assert_eq!(get(&f, bare.id).await, bare);

    let stored = tenants_of(&f, c.id).await;
    let expect: Vec<CampaignTenant> = [t[0], t[1], t[2]].iter().map(|id| CampaignTenant { campaign_id: c.id, ..pending(*id) }).collect();
    assert_eq!(stored, expect, "pending, in no wave, by tenant id");
    assert!(active(&db, c.id).is_empty(), "a draft's tenants are not active");
    assert_eq!(audits(&db, c.id), ["miniprogram.campaign.create"], "the audit record names the new campaign");
});

store_test!(campaigns_are_seen_by_the_platform_all_a_partner_its_own_and_a_tenant_none, |db| {
    let f = fixture(&db).await;
    let platform = insert(&f, campaign(None, "Platform's", t0()), &[f.tenants[0]]).await;
    let mine = insert(&f, campaign(Some(f.partner), "P's", t0()), &[f.tenants[1]]).await;
    let theirs = insert(&f, campaign(Some(f.other_partner), "Q's", t0()), &[f.stranger]).await;
    let partner = Party::Partner { partner_id: f.partner };
    let tenant = Party::Tenant { tenant_id: f.tenants[1], partner_id: Some(f.partner) };
    let list = |scope: Party| {
        let repo = f.repo.clone();
        async move { ids(&repo.list_campaigns(scope, CampaignQuery::default()).await.unwrap()) }
    };

    assert_eq!(list(Party::Platform).await, [theirs.id, mine.id, platform.id]);
    assert_eq!(list(partner).await, [mine.id]);
    assert_eq!(list(Party::Partner { partner_id: f.other_partner }).await, [theirs.id]);
    assert!(list(tenant).await.is_empty());
    for c in [&platform, &mine, &theirs] {
        assert_eq!(f.repo.campaign(Party::Platform, c.id).await.unwrap().as_ref(), Some(c));
        assert_eq!(f.repo.campaign(tenant, c.id).await.unwrap(), None, "a tenant sees no campaign, not even one naming it");
    }
    assert_eq!(f.repo.campaign(partner, mine.id).await.unwrap(), Some(mine.clone()));
    assert_eq!(f.repo.campaign(partner, platform.id).await.unwrap(), None);
    assert_eq!(f.repo.campaign(partner, theirs.id).await.unwrap(), None);
    assert_eq!(f.repo.campaign(Party::Platform, theirs.id + 100).await.unwrap(), None);
});

store_test!(campaign_lists_filter_by_status_sort_and_page, |db| {
    let f = fixture(&db).await;
    // Created at minutes 30, 10, 20, 0: creation time and id disagree.
    let mut made = vec![];
    for (i, minutes) in [30, 10, 20, 0].into_iter().enumerate() {
        made.push(insert(&f, campaign(None, &format!("C{i}"), at(minutes)), &[f.tenants[i]]).await);
    }
    assert!(set_status(&f, &made[1], CampaignStatus::Running).await.unwrap());
    assert!(set_status(&f, &made[2], CampaignStatus::Running).await.unwrap());
    let id: Vec<i64> = made.iter().map(|c| c.id).collect();
    let by = |q: CampaignQuery| {
        let repo = f.repo.clone();
        async move { ids(&repo.list_campaigns(Party::Platform, q).await.unwrap()) }
    };
    let sorted = |s: &str| CampaignQuery { list: ListQuery::parse(None, None, None, Some(s)).unwrap(), ..Default::default() };

    assert_eq!(by(CampaignQuery::default()).await, [id[3], id[2], id[1], id[0]], "newest first by default");
    assert_eq!(by(CampaignQuery { status: Some(CampaignStatus::Running), ..Default::default() }).await, [id[2], id[1]]);
    assert_eq!(by(CampaignQuery { status: Some(CampaignStatus::Draft), ..Default::default() }).await, [id[3], id[0]]);
    assert!(by(CampaignQuery { status: Some(CampaignStatus::Paused), ..Default::default() }).await.is_empty());
    assert_eq!(by(sorted("id")).await, id);
    assert_eq!(by(sorted("created_at")).await, [id[3], id[1], id[2], id[0]]);
    assert_eq!(by(sorted("-created_at")).await, [id[0], id[2], id[1], id[3]]);

    let page2 = CampaignQuery { list: ListQuery::parse(Some(2), Some(3), None, Some("id")).unwrap(), ..Default::default() };
    let page = f.repo.list_campaigns(Party::Platform, page2).await.unwrap();
    assert_eq!((ids(&page), page.total, page.page, page.page_size), (vec![id[3]], 4, 2, 3));
    let first = CampaignQuery { list: ListQuery::parse(Some(1), Some(1), None, None).unwrap(), status: Some(CampaignStatus::Running) };
    let page = f.repo.list_campaigns(Party::Platform, first).await.unwrap();
    assert_eq!((ids(&page), page.total), (vec![id[2]], 2));
});

store_test!(a_campaign_write_is_conditional_on_the_revision_read, |db| {
    let f = fixture(&db).await;
    let c = insert(&f, campaign(None, "Spring", t0()), &[f.tenants[0], f.tenants[1]]).await;
    let mut next = c.clone();
    next.status = CampaignStatus::Running;
    next.started_at = Some(at(1));
    next.current_wave = Some(0);
    next.waves[0].status = WaveStatus::Running;
    next.waves[0].tenants = 2;
    next.name = "Spring, renamed".into();
    let audit = AuditRecord::system(at(1), "miniprogram.campaign.start", "miniprogram_campaign", Some(c.id));

    assert!(f.repo.update_campaign(next.clone(), 0, Effects::maybe_audited(Some(audit.clone()))).await.unwrap());
    assert_eq!(get(&f, c.id).await, Campaign { revision: 1, ..next.clone() });
    assert_eq!(active(&db, c.id), [f.tenants[0], f.tenants[1]], "a running campaign's tenants are active");

    let stale = Campaign { status: CampaignStatus::Cancelled, finished_at: Some(at(2)), ..next.clone() };
    assert!(!f.repo.update_campaign(stale, 0, Effects::maybe_audited(Some(audit.clone()))).await.unwrap(), "the revision moved");
    assert_eq!(get(&f, c.id).await, Campaign { revision: 1, ..next.clone() }, "nothing written");
    assert_eq!(active(&db, c.id).len(), 2);
    assert_eq!(audits(&db, c.id), ["miniprogram.campaign.create", "miniprogram.campaign.start"], "no audit for a lost write");

    let paused = Campaign { status: CampaignStatus::Paused, paused_reason: Some(PauseReason::Quota), revision: 1, ..next.clone() };
    assert!(f.repo.update_campaign(paused.clone(), 1, Effects::none()).await.unwrap());
    assert_eq!(get(&f, c.id).await, Campaign { revision: 2, ..paused });
    assert_eq!(active(&db, c.id).len(), 2, "a paused campaign's tenants stay active");
    assert!(!f.repo.update_campaign(next, 5, Effects::none()).await.unwrap(), "a revision never stored");
});

// --- one active campaign per tenant ------------------------------------------------------------

store_test!(a_tenant_in_a_running_campaign_keeps_another_from_starting_until_it_ends, |db| {
    let f = fixture(&db).await;
    let t = &f.tenants;
    let a = insert(&f, campaign(None, "A", t0()), &[t[0], t[1], t[2]]).await;
    let b = insert(&f, campaign(None, "B", t0()), &[t[3], t[2], t[1]]).await;
    let c = insert(&f, campaign(None, "C", t0()), &[t[3]]).await;
    assert!(set_status(&f, &a, CampaignStatus::Running).await.unwrap());
    let a = get(&f, a.id).await;
    let start_b = Campaign { status: CampaignStatus::Running, ..b.clone() };
    let audit = AuditRecord::system(at(1), "miniprogram.campaign.start", "miniprogram_campaign", Some(b.id));

    assert_in_campaign(f.repo.update_campaign(start_b.clone(), 0, Effects::maybe_audited(Some(audit.clone()))).await, t[1], a.id);
    assert_eq!(get(&f, b.id).await, b, "still a draft, revision 0");
    assert!(active(&db, b.id).is_empty(), "none of its tenants became active");
    assert_eq!(audits(&db, b.id), ["miniprogram.campaign.create"], "no audit of the refused start");

    assert!(set_status(&f, &a, CampaignStatus::Paused).await.unwrap());
    let a = get(&f, a.id).await;
    assert_in_campaign(f.repo.update_campaign(start_b.clone(), 0, Effects::none()).await, t[1], a.id);

    assert!(set_status(&f, &a, CampaignStatus::Completed).await.unwrap());
    assert!(active(&db, a.id).is_empty(), "a completed campaign's tenants are free");
    assert!(f.repo.update_campaign(start_b, 0, Effects::maybe_audited(Some(audit))).await.unwrap());
    assert_eq!(active(&db, b.id), [t[1], t[2], t[3]]);
    assert_eq!(audits(&db, b.id), ["miniprogram.campaign.create", "miniprogram.campaign.start"]);

    // A cancelled campaign frees its tenants too, and a draft may not start over one running.
    let b = get(&f, b.id).await;
    assert_in_campaign(set_status(&f, &c, CampaignStatus::Running).await, t[3], b.id);
    assert!(set_status(&f, &b, CampaignStatus::Cancelled).await.unwrap());
    assert!(set_status(&f, &c, CampaignStatus::Running).await.unwrap());
    assert_eq!(active(&db, c.id), [t[3]]);
});

store_test!(of_two_campaigns_sharing_tenants_started_at_once_exactly_one_starts, |db| {
    let f = fixture(&db).await;
    let t = f.tenants.clone();
    let repo = Arc::new(f.repo.clone());
    for round in 0..5 {
        // The shared tenants in opposite orders, and one of each campaign's own.
        let a = insert(&f, campaign(None, "A", t0()), &[t[0], t[1], t[2], t[3]]).await;
        let b = insert(&f, campaign(None, "B", t0()), &[t[3], t[2], t[1], t[4]]).await;
        let barrier = Arc::new(tokio::sync::Barrier::new(2));
        let start = |c: &Campaign| {
            let (repo, barrier) = (repo.clone(), barrier.clone());
            let running = Campaign { status: CampaignStatus::Running, ..c.clone() };
            tokio::spawn(async move {
                barrier.wait().await;
                repo.update_campaign(running, 0, Effects::none()).await
            })
        };
        let (ra, rb) = tokio::join!(start(&a), start(&b));
        let (ra, rb) = (ra.unwrap(), rb.unwrap());

        let (winner, loser, lost) = match (&ra, &rb) {
            (Ok(true), Err(_)) => (&a, &b, rb),
            (Err(_), Ok(true)) => (&b, &a, ra),
            other => panic!("round {round}: exactly one should start, got {other:?}"),
        };
        assert_in_campaign(lost, t[1], winner.id);
        assert_eq!(get(&f, winner.id).await.status, CampaignStatus::Running);
        assert_eq!(get(&f, loser.id).await, *loser, "round {round}: the loser is still a draft");
        assert_eq!(active(&db, winner.id).len(), 4);
        assert!(active(&db, loser.id).is_empty());

        assert!(set_status(&f, &get(&f, winner.id).await, CampaignStatus::Cancelled).await.unwrap());
        assert!(set_status(&f, loser, CampaignStatus::Cancelled).await.unwrap());
    }
});

store_test!(a_campaign_naming_a_tenant_active_elsewhere_is_not_stored, |db| {
    let f = fixture(&db).await;
    let t = &f.tenants;
    let a = insert(&f, campaign(None, "A", t0()), &[t[0], t[1], t[2]]).await;
    assert!(set_status(&f, &a, CampaignStatus::Running).await.unwrap());
    let count = |db: &Db| -> i64 { mp_campaigns::table.count().get_result(&mut *db.conn().unwrap()).unwrap() };
    let before = count(&db);

    let rows = [t[4], t[2], t[1]].iter().map(|t| pending(*t)).collect();
    let refused = f.repo.insert_campaign(campaign(None, "B", t0()), rows, Effects::audited(create_audit())).await;
    assert_in_campaign(refused, t[2], a.id);
    assert_eq!(count(&db), before, "nothing stored");
    let creates: i64 = audit_logs::table
        .filter(audit_logs::action.eq("miniprogram.campaign.create"))
        .count()
        .get_result(&mut *db.conn().unwrap())
        .unwrap();
    assert_eq!(creates, 1, "no audit of the refused campaign");

    // A draft naming the same tenants as another draft is fine.
    insert(&f, campaign(None, "C", t0()), &[t[4], t[5]]).await;
    insert(&f, campaign(None, "D", t0()), &[t[4], t[5]]).await;
});

store_test!(a_campaign_of_many_tenants_is_stored_in_one_go, |db| {
    let f = fixture(&db).await;
    let partner = f.partner;
    let more: Vec<i64> = db
        .write_blocking(move |conn| {
            use atrium_store::schema::tenants;
            let now = t0().naive_utc();
            let mut ids = vec![];
            for i in 0..2_492 {
                let row = (
                    tenants::partner_id.eq(partner),
                    tenants::name.eq(format!("T{i}")),
                    tenants::created_at.eq(now),
                    tenants::updated_at.eq(now),
                );
                ids.push(diesel::insert_into(tenants::table).values(row).returning(tenants::id).get_result::<i64>(conn).unwrap());
            }
            Ok(ids)
        })
        .unwrap();
    let many: Vec<i64> = f.tenants.iter().copied().chain(more).collect();
    let c = insert(&f, campaign(None, "Big", t0()), &many).await;
    let counts = f.repo.campaign_counts(Party::Platform, c.id, None).await.unwrap();
    assert_eq!(counts, [(CampaignTenantStatus::Pending, 2_500)]);
    assert_eq!(f.repo.assign_wave(c.id, 0, 2_400).await.unwrap(), 2_400);
    let other = insert(&f, campaign(None, "Late", t0()), &many[2_000..]).await;
    assert!(set_status(&f, &c, CampaignStatus::Running).await.unwrap());
    assert_eq!(active(&db, c.id).len(), 2_500);
    assert_in_campaign(set_status(&f, &other, CampaignStatus::Running).await, many[2_000], c.id);
    // The first named that is active elsewhere, in the order named.
    let rows = [f.stranger, many[2_499], many[5]].iter().map(|t| pending(*t)).collect();
    assert_in_campaign(
        f.repo.insert_campaign(campaign(None, "Refused", t0()), rows, Effects::audited(create_audit())).await,
        many[2_499],
        c.id,
    );
    let retried = f.repo.retry_tenants(c.id, 0, Some(many.clone()), at(1)).await.unwrap();
    assert_eq!(retried, 0, "none is retryable");
});

// --- waves ------------------------------------------------------------------------------------

store_test!(a_wave_takes_the_first_tenants_by_id_that_are_in_no_wave, |db| {
    let f = fixture(&db).await;
    let t = &f.tenants;
    let c = insert(&f, campaign(None, "Waves", t0()), &[t[5], t[3], t[0], t[4], t[1], t[2]]).await;

    assert_eq!(f.repo.assign_wave(c.id, 0, 2).await.unwrap(), 2);
    let wave0 = f.repo.wave_tenants(c.id, 0).await.unwrap();
    assert_eq!(wave0.iter().map(|t| t.tenant_id).collect::<Vec<_>>(), [t[0], t[1]]);
    assert!(wave0.iter().all(|t| t.wave == Some(0) && t.revision == 1), "{wave0:?}");
    assert_eq!(f.repo.assign_wave(c.id, 1, 10).await.unwrap(), 4, "the rest");
    let wave1: Vec<i64> = f.repo.wave_tenants(c.id, 1).await.unwrap().iter().map(|t| t.tenant_id).collect();
    assert_eq!(wave1, [t[2], t[3], t[4], t[5]]);
    assert_eq!(f.repo.assign_wave(c.id, 2, 10).await.unwrap(), 0, "none left");
    assert!(f.repo.wave_tenants(c.id, 2).await.unwrap().is_empty());
    assert_eq!(f.repo.wave_tenants(c.id, 0).await.unwrap(), wave0, "an assigned tenant stays in its wave");

    let q = |status: Option<CampaignTenantStatus>, wave: Option<u32>, sort: Option<&str>, page: i64| CampaignTenantQuery {
        list: ListQuery::parse(Some(page), Some(3), None, sort).unwrap(),
        status,
        wave,
    };
    let list = |q: CampaignTenantQuery| {
        let repo = f.repo.clone();
        async move {
            let page = repo.campaign_tenants(Party::Platform, c.id, q).await.unwrap();
            (page.items.iter().map(|t| t.tenant_id).collect::<Vec<_>>(), page.total)
        }
    };
    assert_eq!(list(q(None, Some(1), None, 1)).await, (vec![t[2], t[3], t[4]], 4));
    assert_eq!(list(q(None, Some(1), None, 2)).await, (vec![t[5]], 4));
    assert_eq!(list(q(None, None, Some("-tenant_id"), 1)).await, (vec![t[5], t[4], t[3]], 6));
    let mut moved = tenant_of(&f, c.id, t[3]).await;
    moved.status = CampaignTenantStatus::Uploading;
    moved.updated_at = at(5);
    assert!(f.repo.update_campaign_tenant(moved.clone(), moved.revision).await.unwrap());
    assert_eq!(list(q(Some(CampaignTenantStatus::Uploading), None, None, 1)).await, (vec![t[3]], 1));
    assert_eq!(list(q(Some(CampaignTenantStatus::Pending), Some(0), None, 1)).await, (vec![t[0], t[1]], 2));
    assert_eq!(list(q(None, None, Some("-updated_at"), 1)).await.0[0], t[3]);
    assert_eq!(list(q(None, None, Some("updated_at"), 2)).await.0, [t[4], t[5], t[3]], "ties by tenant id");
});

store_test!(waves_assigned_at_once_never_take_a_tenant_twice, |db| {
    let f = fixture(&db).await;
    for round in 0..5 {
        let c = insert(&f, campaign(None, "Race", t0()), &f.tenants).await;
        let repo = Arc::new(f.repo.clone());
        let barrier = Arc::new(tokio::sync::Barrier::new(4));
        let mut tasks = vec![];
        for wave in 0..4u32 {
            let (repo, barrier) = (repo.clone(), barrier.clone());
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                (wave, repo.assign_wave(c.id, wave, 3).await.unwrap())
            }));
        }
        let mut took = 0;
        for task in tasks {
            let (wave, n) = task.await.unwrap();
            assert!(n <= 3, "round {round}: wave {wave} took {n}");
            assert_eq!(f.repo.wave_tenants(c.id, wave).await.unwrap().len() as u32, n, "round {round}: wave {wave}");
            took += n;
        }
        let assigned = tenants_of(&f, c.id).await.into_iter().filter(|t| t.wave.is_some()).collect::<Vec<_>>();
        assert_eq!(assigned.len() as u32, took, "round {round}: every tenant counted once");
        assert!(assigned.iter().all(|t| t.revision == 1), "round {round}: each taken once: {assigned:?}");
    }
});

// --- tenants' progress ------------------------------------------------------------------------

store_test!(a_tenants_progress_write_is_conditional_on_the_revision_read, |db| {
    let f = fixture(&db).await;
    let c = insert(&f, campaign(None, "Spring", t0()), &[f.tenants[0], f.tenants[1]]).await;
    f.repo.assign_wave(c.id, 0, 2).await.unwrap();
    let read = tenant_of(&f, c.id, f.tenants[0]).await;
    let next = CampaignTenant {
        status: CampaignTenantStatus::Failed,
        authorizer_appid: Some("wxnew".into()),
        upload_task_id: Some(11),
        audit_task_id: Some(12),
        release_task_id: Some(13),
        reason: Some("the platform refused".into()),
        errcode: Some(85_009),
        attempts: 3,
        next_at: Some(at(9)),
        updated_at: at(8),
        ..read.clone()
    };

    assert!(f.repo.update_campaign_tenant(next.clone(), read.revision).await.unwrap());
    assert_eq!(tenant_of(&f, c.id, f.tenants[0]).await, CampaignTenant { revision: read.revision + 1, ..next.clone() });
    let other = CampaignTenant { status: CampaignTenantStatus::Released, ..read.clone() };
    assert!(!f.repo.update_campaign_tenant(other, read.revision).await.unwrap(), "the revision moved");
    assert_eq!(tenant_of(&f, c.id, f.tenants[0]).await.status, CampaignTenantStatus::Failed, "nothing written");
    assert_eq!(tenant_of(&f, c.id, f.tenants[1]).await.status, CampaignTenantStatus::Pending, "the other tenant is untouched");

    let cleared = CampaignTenant { next_at: None, reason: None, errcode: None, revision: read.revision + 1, ..next };
    assert!(f.repo.update_campaign_tenant(cleared.clone(), read.revision + 1).await.unwrap());
    assert_eq!(tenant_of(&f, c.id, f.tenants[0]).await, CampaignTenant { revision: read.revision + 2, ..cleared });
});

/// Sets the tenant's status (and wave) as a step would.
async fn put(f: &Fixture, campaign_id: i64, tenant_id: i64, wave: Option<u32>, status: CampaignTenantStatus) {
    let read = tenant_of(f, campaign_id, tenant_id).await;
    let next = CampaignTenant {
        wave,
        status,
        upload_task_id: Some(100 + tenant_id),
        audit_task_id: Some(200 + tenant_id),
        reason: Some(format!("{} because", status.as_str())),
        errcode: Some(-1),
        attempts: 2,
        next_at: Some(at(30)),
        updated_at: at(3),
        ..read.clone()
    };
    assert!(f.repo.update_campaign_tenant(next, read.revision).await.unwrap());
}

store_test!(counts_are_per_status_of_the_campaign_or_of_one_wave, |db| {
    use CampaignTenantStatus::*;
    let f = fixture(&db).await;
    let t = &f.tenants;
    let c = insert(&f, campaign(None, "Counts", t0()), &t[..6]).await;
    let other = insert(&f, campaign(None, "Other", t0()), &t[..2]).await;
    put(&f, c.id, t[0], Some(0), Released).await;
    put(&f, c.id, t[1], Some(0), Rejected).await;
    put(&f, c.id, t[2], Some(0), Released).await;
    put(&f, c.id, t[3], Some(1), Auditing).await;
    put(&f, other.id, t[0], Some(0), Failed).await;

    assert_eq!(
        f.repo.campaign_counts(Party::Platform, c.id, None).await.unwrap(),
        [(Pending, 2), (Auditing, 1), (Rejected, 1), (Released, 2)]
    );
    assert_eq!(f.repo.campaign_counts(Party::Platform, c.id, Some(0)).await.unwrap(), [(Rejected, 1), (Released, 2)]);
    assert_eq!(f.repo.campaign_counts(Party::Platform, c.id, Some(1)).await.unwrap(), [(Auditing, 1)]);
    assert!(f.repo.campaign_counts(Party::Platform, c.id, Some(2)).await.unwrap().is_empty());
    assert_eq!(f.repo.campaign_counts(Party::Platform, other.id, None).await.unwrap(), [(Pending, 1), (Failed, 1)]);
    assert!(f.repo.campaign_counts(Party::Platform, other.id + 100, None).await.unwrap().is_empty());
});

store_test!(a_retry_sets_the_retryable_tenants_of_started_waves_back_to_pending, |db| {
    use CampaignTenantStatus::*;
    let f = fixture(&db).await;
    let t = &f.tenants;
    let c = insert(&f, campaign(None, "Retry", t0()), &t[..7]).await;
    let other = insert(&f, campaign(None, "Other", t0()), &[t[0]]).await;
    put(&f, c.id, t[0], Some(0), Failed).await;
    put(&f, c.id, t[1], Some(0), Rejected).await;
    put(&f, c.id, t[2], Some(1), PreflightFailed).await;
    put(&f, c.id, t[3], Some(0), Released).await;
    put(&f, c.id, t[4], Some(2), Failed).await;
    put(&f, c.id, t[5], Some(1), Auditing).await;
    put(&f, other.id, t[0], Some(0), Failed).await;
    let before = tenants_of(&f, c.id).await;

    assert_eq!(f.repo.retry_tenants(c.id, 1, Some(vec![t[1], t[3], t[4], t[6]]), at(40)).await.unwrap(), 1, "only t1 of the named");
    let t1 = tenant_of(&f, c.id, t[1]).await;
    let expect = CampaignTenant {
        status: Pending,
        reason: None,
        errcode: None,
        attempts: 0,
        next_at: None,
        updated_at: at(40),
        revision: before[1].revision + 1,
        ..before[1].clone()
    };
    assert_eq!(t1, expect, "its wave and task ids stay");
    assert_eq!(t1.upload_task_id, Some(100 + t[1]));

    assert_eq!(f.repo.retry_tenants(c.id, 1, None, at(41)).await.unwrap(), 2, "t0 and t2; t4's wave has not started");
    let after = tenants_of(&f, c.id).await;
    let statuses: Vec<_> = after.iter().map(|t| (t.status, t.wave)).collect();
    assert_eq!(
        statuses,
        [
            (Pending, Some(0)),
            (Pending, Some(0)),
            (Pending, Some(1)),
            (Released, Some(0)),
            (Failed, Some(2)),
            (Auditing, Some(1)),
            (Pending, None)
        ]
    );
    assert_eq!(after[3], before[3], "a released tenant is untouched");
    assert_eq!(after[5], before[5]);
    assert_eq!(tenant_of(&f, other.id, t[0]).await.status, Failed, "another campaign's tenant is untouched");
    assert_eq!(f.repo.retry_tenants(c.id, 2, None, at(42)).await.unwrap(), 1, "t4 once its wave started");

    // Cancelling: the tenants not started are skipped.
    assert_eq!(f.repo.skip_pending(c.id, at(50)).await.unwrap(), 5);
    let after = tenants_of(&f, c.id).await;
    assert_eq!(after.iter().filter(|t| t.status == Skipped).count(), 5);
    let t6 = &after[6];
    assert_eq!((t6.status, t6.updated_at, t6.revision), (Skipped, at(50), 1));
    assert_eq!(after[5].status, Auditing, "a tenant under way finishes its step");
    assert_eq!(f.repo.skip_pending(c.id, at(51)).await.unwrap(), 0);
    assert_eq!(tenant_of(&f, other.id, t[0]).await.status, Failed);
});

store_test!(a_partner_sees_and_counts_only_the_tenants_in_its_scope_now, |db| {
    let f = fixture(&db).await;
    let t = &f.tenants;
    let org = OrgStore::new(db.clone(), FieldCipher::new(&[9u8; 32]));
    let c = insert(&f, campaign(Some(f.partner), "Moved", t0()), &t[..4]).await;
    let partner = Party::Partner { partner_id: f.partner };
    assert!(f.repo.tenants_outside(partner, c.id, None, 10).await.unwrap().is_empty(), "all four are the partner's");

    // Two tenants move: one to the other partner, one to none.
    for (tenant_id, to) in [(t[1], Some(f.other_partner)), (t[3], None)] {
        let mut moved = org.get_tenant(Party::Platform, tenant_id).await.unwrap().unwrap();
        moved.partner_id = to;
        org.update_tenant(moved, Effects::audited(AuditRecord::system(t0(), "tenant.update", "tenant", Some(tenant_id)))).await.unwrap();
    }
    assert_eq!(f.repo.tenants_outside(partner, c.id, None, 10).await.unwrap(), [t[1], t[3]]);
    assert_eq!(f.repo.tenants_outside(partner, c.id, None, 1).await.unwrap(), [t[1]], "at most the limit");
    assert!(f.repo.tenants_outside(Party::Platform, c.id, None, 10).await.unwrap().is_empty(), "the platform's scope holds them all");
    assert_eq!(f.repo.assign_wave(c.id, 0, 2).await.unwrap(), 2);
    assert_eq!(f.repo.tenants_outside(partner, c.id, Some(0), 10).await.unwrap(), [t[1]], "of wave 0 only");
    assert_eq!(f.repo.tenants_outside(partner, c.id, Some(1), 10).await.unwrap(), Vec::<i64>::new());

    let q = || CampaignTenantQuery { list: ListQuery::parse(Some(1), Some(100), None, None).unwrap(), ..Default::default() };
    let seen = |page: atrium_kernel::Page<CampaignTenant>| (page.items.iter().map(|x| x.tenant_id).collect::<Vec<_>>(), page.total);
    assert_eq!(seen(f.repo.campaign_tenants(partner, c.id, q()).await.unwrap()), (vec![t[0], t[2]], 2));
    assert_eq!(seen(f.repo.campaign_tenants(Party::Platform, c.id, q()).await.unwrap()), (vec![t[0], t[1], t[2], t[3]], 4));
    let other = Party::Partner { partner_id: f.other_partner };
    assert_eq!(seen(f.repo.campaign_tenants(other, c.id, q()).await.unwrap()).0, [t[1]]);
    use CampaignTenantStatus::*;
    assert_eq!(f.repo.campaign_counts(partner, c.id, None).await.unwrap(), [(Pending, 2)]);
    assert_eq!(f.repo.campaign_counts(Party::Platform, c.id, None).await.unwrap(), [(Pending, 4)]);
    assert_eq!(f.repo.campaign_counts(partner, c.id, Some(0)).await.unwrap(), [(Pending, 1)]);
});
