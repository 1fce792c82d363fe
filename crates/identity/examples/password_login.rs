//! A password login through [`IdentityService`], its ports doubled with the crate's `mock`
//! feature: storage is one in-memory user and the sessions the service starts, the password
//! hasher a stand-in (a real one is slow on purpose; the server uses bcrypt). What a service
//! embedding identity starts from, and how its tests can stand in for storage.
//!
//! The user logs in, the access token is resolved back to the user's principal (as every
//! request does), and a wrong password is refused and counted.
//!
//! Run it with `cargo run -p atrium-identity --example password_login`.
use atrium_identity::{
    ClientInfo, IdentityConfig, IdentityService, LoginLookup, MockCodeSender, MockIdentityRepo, MockPasswordHasher, NewSession, Principal,
    RoleRef, SessionRecord, User, UserCredentials, UserStatus,
};
use atrium_kernel::{Clock, Party, PartyStanding, PermissionSet, SystemClock};
use std::sync::{Arc, Mutex, PoisonError};

/// The stand-in hasher's "hash" of a password; never store passwords like this.
fn toy_hash(password: &str) -> String {
    format!("toy:{password}")
}

/// The one user of the example, a payroll clerk of tenant 7.
fn clerk(clock: &dyn Clock) -> User {
    User {
        id: 42,
        username: "han.meimei".into(),
        name: "Han Meimei".into(),
        phone: Some("+8613800138000".into()),
        email: None,
        party: Party::Tenant { tenant_id: 7, partner_id: None },
        status: UserStatus::Active,
        chat_bound: false,
        created_at: clock.now(),
        updated_at: clock.now(),
    }
}

/// Identity storage holding `user` (with `password`) and the sessions started.
fn repo(user: User, password: &str) -> MockIdentityRepo {
    let sessions: Arc<Mutex<Vec<NewSession>>> = Arc::default();
    let mut repo = MockIdentityRepo::new();
    // No failed logins from this address so far.
    repo.expect_rate_bucket().returning(|_, _| Ok((0, None)));
    repo.expect_hit_rate_bucket().returning(|_, _, _| Ok(1));
    let (known, hash) = (user.clone(), toy_hash(password));
    repo.expect_find_login().returning(move |login| {
        let credentials = [known.username.as_str(), known.phone.as_deref().unwrap_or_default()].contains(&login).then(|| UserCredentials {
            user: known.clone(),
            password_hash: Some(hash.clone()),
            standing: PartyStanding::Active,
        });
        Ok(LoginLookup { credentials, failures: 0, locked_until: None })
    });
    repo.expect_record_login_failure().returning(|login, _, threshold, _, _| {
        println!("  (storage) failure counted against {login:?}; {threshold} in a row lock it");
        Ok(None)
    });
    let started = sessions.clone();
    repo.expect_create_session().returning(move |session, _refresh, audit| {
        println!("  (storage) session stored with its refresh token's hash and the audit record {:?}", audit.action);
        started.lock().unwrap_or_else(PoisonError::into_inner).push(session);
        Ok(())
    });
    repo.expect_load_principal().returning(move |session_id| {
        let sessions = sessions.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(sessions.iter().find(|s| s.id == session_id).map(|s| Principal {
            session: SessionRecord {
                id: s.id.clone(),
                user_id: s.user_id,
                created_at: s.created_at,
                expires_at: s.expires_at,
                revoked_at: None,
            },
            user: user.clone(),
            standing: PartyStanding::Active,
            roles: vec![RoleRef { id: 4, code: "payroll_clerk".into(), name: "Payroll clerk".into() }],
            permissions: PermissionSet::new(["payroll:read", "payroll:create", "payroll:calculate", "employee:read"]),
        }))
    });
    repo
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let clock = Arc::new(SystemClock);
    let password = "Spring-Rain-2026";
    let mut hasher = MockPasswordHasher::new();
    hasher.expect_verify().returning(|password, hash| Ok(toy_hash(password) == hash));
    let config = IdentityConfig { jwt_secret: b"an example secret of at least 32 bytes".to_vec(), ..IdentityConfig::default() };
    let service = IdentityService::new(
        Arc::new(repo(clerk(clock.as_ref()), password)),
        Arc::new(hasher),
        // No codes are sent in this example.
        Arc::new(MockCodeSender::new()),
        None,
        clock,
        config,
    );
    let client = ClientInfo { ip: Some("203.0.113.9".into()), user_agent: Some("example".into()), request_id: None };

    println!("login han.meimei with the right password");
    let grant = service.login_password("han.meimei", password, &client).await?;
    println!(
        "  logged in as {} (user {}): access token for {} s, refresh token for {} s",
        grant.user.name, grant.user.id, grant.expires_in, grant.refresh_expires_in
    );
    let token_prefix: String = grant.access_token.chars().take(24).collect();
    println!("  access token {token_prefix}… (a JWT; send it as `Authorization: Bearer …`)");

    println!("resolve the access token, as every request does");
    let principal = service.authenticate(&grant.access_token).await?;
    let roles: Vec<&str> = principal.roles.iter().map(|r| r.code.as_str()).collect();
    let permissions: Vec<&str> = principal.permissions.iter().collect();
    println!("  {} of {:?}, roles {roles:?}", principal.user.username, principal.user.party);
    println!("  permissions {permissions:?}");
    println!("  may approve payroll? {}", principal.permissions.allows("payroll:approve"));

    println!("login han.meimei with a wrong password");
    match service.login_password("han.meimei", "Autumn-Leaf-2026", &client).await {
        Err(e) => println!("  refused ({}): {e}", e.reason()),
        Ok(_) => println!("  unexpectedly logged in"),
    }
    Ok(())
}
