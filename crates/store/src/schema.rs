//! Table definitions, written by hand to match `migrations/{sqlite,postgres}`. Timestamps
//! are `TIMESTAMP` holding UTC on both backends.

diesel::table! {
    partners (id) {
        id -> BigInt,
        name -> Text,
        contact_name -> Nullable<Text>,
        phone -> Nullable<Text>,
        email -> Nullable<Text>,
        status -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    tenants (id) {
        id -> BigInt,
        partner_id -> Nullable<BigInt>,
        name -> Text,
        credit_code -> Nullable<Text>,
        contact_name -> Nullable<Text>,
        phone -> Nullable<Text>,
        status -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        email -> Nullable<Text>,
        payroll_policy -> Nullable<Text>,
        employee_count -> BigInt,
    }
}

diesel::table! {
    users (id) {
        id -> BigInt,
        username -> Text,
        password_hash -> Nullable<Text>,
        name -> Text,
        phone -> Nullable<Text>,
        email -> Nullable<Text>,
        party_type -> Text,
        partner_id -> Nullable<BigInt>,
        tenant_id -> Nullable<BigInt>,
        status -> Text,
        chat_identity -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    roles (id) {
        id -> BigInt,
        code -> Text,
        name -> Text,
        party_type -> Text,
        owner_partner_id -> Nullable<BigInt>,
        owner_tenant_id -> Nullable<BigInt>,
        builtin -> Bool,
        permissions -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    user_roles (user_id, role_id) {
        user_id -> BigInt,
        role_id -> BigInt,
    }
}

diesel::table! {
    sessions (id) {
        id -> Text,
        user_id -> BigInt,
        created_at -> Timestamp,
        expires_at -> Timestamp,
        revoked_at -> Nullable<Timestamp>,
        revoke_reason -> Nullable<Text>,
        ip -> Nullable<Text>,
        user_agent -> Nullable<Text>,
    }
}

diesel::table! {
    refresh_tokens (token_hash) {
        token_hash -> Text,
        session_id -> Text,
        created_at -> Timestamp,
        expires_at -> Timestamp,
        used_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    verification_codes (id) {
        id -> BigInt,
        target -> Text,
        purpose -> Text,
        code_hash -> Text,
        attempts -> Integer,
        created_at -> Timestamp,
        expires_at -> Timestamp,
        consumed_at -> Nullable<Timestamp>,
        ip -> Nullable<Text>,
    }
}

diesel::table! {
    login_failures (login_key) {
        login_key -> Text,
        failures -> Integer,
        locked_until -> Nullable<Timestamp>,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    rate_events (id) {
        id -> BigInt,
        bucket -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    chat_tickets (ticket) {
        ticket -> Text,
        status -> Text,
        chat_identity -> Nullable<Text>,
        user_id -> Nullable<BigInt>,
        created_at -> Timestamp,
        expires_at -> Timestamp,
        consumed_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    employees (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        employee_no -> Nullable<Text>,
        name -> Text,
        phone -> Nullable<Text>,
        email -> Nullable<Text>,
        id_card_enc -> Nullable<Text>,
        id_card_hash -> Nullable<Text>,
        bank_name -> Nullable<Text>,
        bank_account_enc -> Nullable<Text>,
        department -> Nullable<Text>,
        position -> Nullable<Text>,
        hire_date -> Nullable<Date>,
        status -> Text,
        base_salary -> BigInt,
        si_base -> Nullable<BigInt>,
        housing_fund_rate -> Text,
        special_deductions -> Text,
        openid -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    /// SQLite only (migration 2026-12-03-000100_deep_pages): the ids of deleted employees,
    /// kept by triggers.
    employee_gaps (id) {
        id -> BigInt,
    }
}

diesel::table! {
    audit_logs (id) {
        id -> BigInt,
        at -> Timestamp,
        actor_user_id -> Nullable<BigInt>,
        ip -> Nullable<Text>,
        request_id -> Nullable<Text>,
        action -> Text,
        target_type -> Text,
        target_id -> Nullable<BigInt>,
        partner_id -> Nullable<BigInt>,
        tenant_id -> Nullable<BigInt>,
        before_json -> Nullable<Text>,
        after_json -> Nullable<Text>,
    }
}

diesel::joinable!(tenants -> partners (partner_id));
diesel::joinable!(employees -> tenants (tenant_id));
diesel::joinable!(users -> tenants (tenant_id));
diesel::joinable!(user_roles -> users (user_id));
diesel::joinable!(user_roles -> roles (role_id));
diesel::joinable!(sessions -> users (user_id));
diesel::joinable!(refresh_tokens -> sessions (session_id));

diesel::allow_tables_to_appear_in_same_query!(
    partners,
    tenants,
    users,
    roles,
    user_roles,
    sessions,
    refresh_tokens,
    verification_codes,
    login_failures,
    rate_events,
    chat_tickets,
    employees,
    audit_logs,
);

// ----- documents (migration 2026-11-23-000020_docs) -----------------------------------------

diesel::table! {
    doc_projects (id) {
        id -> BigInt,
        name -> Text,
        party_type -> Text,
        party_id -> Nullable<BigInt>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    doc_tokens (id) {
        id -> BigInt,
        name -> Text,
        token_hash -> Text,
        party_type -> Text,
        party_id -> Nullable<BigInt>,
        all_projects -> Bool,
        created_by -> Nullable<BigInt>,
        created_at -> Timestamp,
        expires_at -> Nullable<Timestamp>,
        revoked_at -> Nullable<Timestamp>,
        last_used_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    doc_token_projects (token_id, project_id) {
        token_id -> BigInt,
        project_id -> BigInt,
    }
}

diesel::table! {
    documents (id) {
        id -> BigInt,
        project_id -> BigInt,
        parent_id -> Nullable<BigInt>,
        name -> Text,
        content -> Text,
        sort -> BigInt,
        depth -> Integer,
        author_token_id -> Nullable<BigInt>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::joinable!(doc_token_projects -> doc_tokens (token_id));
diesel::joinable!(doc_token_projects -> doc_projects (project_id));
diesel::joinable!(documents -> doc_projects (project_id));

diesel::allow_tables_to_appear_in_same_query!(doc_projects, doc_tokens, doc_token_projects, documents, tenants);

// ----- payroll (migration 2026-11-23-000005_payroll) ----------------------------------------

diesel::table! {
    payroll_sheets (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        period -> Text,
        title -> Text,
        status -> Text,
        employees -> BigInt,
        total_gross -> BigInt,
        total_contributions -> BigInt,
        total_tax -> BigInt,
        total_net_pay -> BigInt,
        delivered -> BigInt,
        failed -> BigInt,
        created_by -> Nullable<BigInt>,
        calculated_by -> Nullable<BigInt>,
        calculated_at -> Nullable<Timestamp>,
        approved_by -> Nullable<BigInt>,
        approved_at -> Nullable<Timestamp>,
        sent_at -> Nullable<Timestamp>,
        send_started_at -> Nullable<Timestamp>,
        version -> BigInt,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        // migration 2026-11-27-000080_payroll_kinds
        kind -> Text,
        ytd_basis -> Nullable<BigInt>,
        // migration 2026-12-05-000100_bank_file_accounts
        accounts_kept -> Bool,
    }
}

diesel::table! {
    /// The bank accounts an approved sheet pays (migration 2026-12-05-000100_bank_file_accounts).
    payroll_sheet_accounts (sheet_id, employee_id) {
        sheet_id -> BigInt,
        employee_id -> BigInt,
        name -> Text,
        bank_name -> Nullable<Text>,
        bank_account_enc -> Text,
    }
}

diesel::table! {
    payroll_items (id) {
        id -> BigInt,
        sheet_id -> BigInt,
        employee_id -> BigInt,
        employee_name -> Text,
        employee_no -> Nullable<Text>,
        allowance -> BigInt,
        overtime -> BigInt,
        bonus -> BigInt,
        leave_deduction -> BigInt,
        other_pre_tax_deduction -> BigInt,
        after_tax_deduction -> BigInt,
        annual_bonus -> BigInt,
        gross -> Nullable<BigInt>,
        tax_free_income -> Nullable<BigInt>,
        contributions -> Nullable<BigInt>,
        special_deduction -> Nullable<BigInt>,
        other_deduction -> Nullable<BigInt>,
        tax -> Nullable<BigInt>,
        annual_bonus_tax -> Nullable<BigInt>,
        net_pay -> Nullable<BigInt>,
        line -> Nullable<Text>,
        delivery_status -> Nullable<Text>,
        delivery_channel -> Nullable<Text>,
        delivery_error -> Nullable<Text>,
        delivery_attempts -> Integer,
        delivered_at -> Nullable<Timestamp>,
    }
}

diesel::joinable!(payroll_sheets -> tenants (tenant_id));
diesel::joinable!(payroll_items -> payroll_sheets (sheet_id));
diesel::joinable!(payroll_items -> employees (employee_id));
diesel::allow_tables_to_appear_in_same_query!(payroll_sheets, payroll_items);
diesel::allow_tables_to_appear_in_same_query!(payroll_sheets, tenants);
diesel::allow_tables_to_appear_in_same_query!(payroll_sheets, employees);
diesel::allow_tables_to_appear_in_same_query!(payroll_items, tenants);
diesel::allow_tables_to_appear_in_same_query!(payroll_items, employees);
diesel::allow_tables_to_appear_in_same_query!(payroll_sheet_accounts, payroll_items);
diesel::allow_tables_to_appear_in_same_query!(payroll_sheet_accounts, payroll_sheets);
diesel::allow_tables_to_appear_in_same_query!(payroll_sheet_accounts, employees);

// ----- payments, idempotency, jobs (migration 2026-11-23-000030_payments) -------------------

diesel::table! {
    payment_configs (tenant_id) {
        tenant_id -> BigInt,
        mchid -> Text,
        appid -> Text,
        merchant_serial_no -> Nullable<Text>,
        merchant_cert_not_after -> Nullable<Timestamp>,
        merchant_private_key_enc -> Nullable<Text>,
        merchant_key_fingerprint -> Nullable<Text>,
        api_v3_key_enc -> Nullable<Text>,
        platform_public_key_id -> Nullable<Text>,
        platform_public_key -> Nullable<Text>,
        platform_key_fingerprint -> Nullable<Text>,
        enabled -> Bool,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        mode -> Text,
        sub_mchid -> Nullable<Text>,
        sub_appid -> Nullable<Text>,
    }
}

// ----- service-provider mode (migration 2026-12-07-000100_service_provider) ----------------

diesel::table! {
    pay_provider (id) {
        id -> BigInt,
        sp_mchid -> Text,
        sp_appid -> Text,
        sp_name -> Nullable<Text>,
        merchant_serial_no -> Nullable<Text>,
        merchant_cert_not_after -> Nullable<Timestamp>,
        merchant_private_key_enc -> Nullable<Text>,
        merchant_key_fingerprint -> Nullable<Text>,
        api_v3_key_enc -> Nullable<Text>,
        platform_public_key_id -> Nullable<Text>,
        platform_public_key -> Nullable<Text>,
        platform_key_fingerprint -> Nullable<Text>,
        enabled -> Bool,
        platform_bp -> Integer,
        default_commission_bp -> Integer,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

// ----- share plans (migration 2026-12-08-000100_share_plans) -------------------------------

diesel::table! {
    share_plans (partner_id, version) {
        partner_id -> BigInt,
        version -> BigInt,
        commission_bp -> Nullable<Integer>,
        platform_bp -> Nullable<Integer>,
        receiver_type -> Text,
        receiver_account -> Text,
        receiver_name -> Nullable<Text>,
        created_at -> Timestamp,
    }
}

// ----- profit sharing (migration 2026-12-09-000100_payment_shares) -------------------------

diesel::table! {
    payment_sharings (payment_id) {
        payment_id -> BigInt,
        tenant_id -> BigInt,
        base -> BigInt,
        platform_bp -> Integer,
        commission_bp -> Integer,
        unfrozen_at -> Nullable<Timestamp>,
        created_at -> Timestamp,
    }
}

diesel::table! {
    payment_shares (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        payment_id -> BigInt,
        out_trade_no -> Text,
        partner_id -> Nullable<BigInt>,
        role -> Text,
        receiver_type -> Text,
        receiver_account -> Text,
        receiver_name -> Nullable<Text>,
        amount -> BigInt,
        status -> Text,
        fail_reason -> Nullable<Text>,
        out_order_no -> Text,
        retries -> Integer,
        plan_version -> Nullable<BigInt>,
        created_at -> Timestamp,
        settled_at -> Nullable<Timestamp>,
        updated_at -> Timestamp,
        returned -> BigInt,
        withheld -> BigInt,
        discrepancy -> Nullable<Text>,
    }
}

// ----- returns before refunds (migration 2026-12-10-000100_share_returns) ------------------

diesel::table! {
    payment_share_returns (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        payment_id -> BigInt,
        share_id -> BigInt,
        out_refund_no -> Text,
        part -> BigInt,
        amount -> BigInt,
        status -> Text,
        out_return_no -> Text,
        return_id -> Nullable<Text>,
        fail_reason -> Nullable<Text>,
        created_at -> Timestamp,
        settled_at -> Nullable<Timestamp>,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    payment_transactions (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        out_trade_no -> Text,
        description -> Text,
        amount -> BigInt,
        openid -> Text,
        attach -> Nullable<Text>,
        prepay_id -> Nullable<Text>,
        trade_state -> Text,
        transaction_id -> Nullable<Text>,
        payer_total -> Nullable<BigInt>,
        success_time -> Nullable<Timestamp>,
        expires_at -> Timestamp,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        order_id -> Nullable<BigInt>,
        method -> Text,
        reference -> Nullable<Text>,
        paid_by -> Nullable<BigInt>,
        discrepancy -> Nullable<Text>,
        sub_mchid -> Nullable<Text>,
    }
}

diesel::table! {
    payment_refunds (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        payment_id -> BigInt,
        out_trade_no -> Text,
        out_refund_no -> Text,
        refund_id -> Nullable<Text>,
        amount -> BigInt,
        status -> Text,
        reason -> Nullable<Text>,
        succeeded_at -> Nullable<Timestamp>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        order_id -> Nullable<BigInt>,
        requested_by -> Nullable<BigInt>,
        fail_reason -> Nullable<Text>,
    }
}

diesel::table! {
    payment_notifications (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        event_id -> Text,
        event_type -> Text,
        received_at -> Timestamp,
    }
}

diesel::table! {
    idempotency_keys (caller, route, idem_key) {
        caller -> Text,
        route -> Text,
        idem_key -> Text,
        request_hash -> Binary,
        status -> Nullable<Integer>,
        response_body -> Nullable<Binary>,
        claimed_at -> Timestamp,
        completed_at -> Nullable<Timestamp>,
        created_at -> Timestamp,
    }
}

diesel::table! {
    jobs (id) {
        id -> BigInt,
        kind -> Text,
        tenant_id -> Nullable<BigInt>,
        payload -> Text,
        status -> Text,
        dedupe_key -> Nullable<Text>,
        run_at -> Timestamp,
        attempts -> Integer,
        locked_until -> Nullable<Timestamp>,
        last_error -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::joinable!(payment_configs -> tenants (tenant_id));
diesel::joinable!(payment_transactions -> tenants (tenant_id));
diesel::joinable!(payment_refunds -> payment_transactions (payment_id));
diesel::allow_tables_to_appear_in_same_query!(payment_configs, payment_transactions, payment_refunds, payment_notifications, tenants);

// ----- orders (migration 2026-11-23-000040_orders) -----------------------------------------

diesel::table! {
    orders (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        order_no -> Text,
        subject -> Text,
        amount -> BigInt,
        paid_amount -> BigInt,
        refunded_amount -> BigInt,
        status -> Text,
        openid -> Nullable<Text>,
        out_trade_no -> Text,
        pay_method -> Nullable<Text>,
        transaction_id -> Nullable<Text>,
        paid_at -> Nullable<Timestamp>,
        pay_reference -> Nullable<Text>,
        paid_by -> Nullable<BigInt>,
        expires_at -> Timestamp,
        created_by -> Nullable<BigInt>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        discrepancy -> Nullable<Text>,
        pay_sub_merchant -> Bool,
    }
}

diesel::table! {
    order_items (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        order_id -> BigInt,
        line_no -> Integer,
        name -> Text,
        quantity -> BigInt,
        unit_price -> BigInt,
    }
}

// What an order knows of its refunds: the ledger's, as the order last synced them
// (migration 2026-12-15-000100_order_refunds).
diesel::table! {
    order_refunds (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        order_id -> BigInt,
        out_refund_no -> Text,
        amount -> BigInt,
        status -> Text,
        reason -> Nullable<Text>,
        requested_by -> Nullable<BigInt>,
        fail_reason -> Nullable<Text>,
        settled_at -> Nullable<Timestamp>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::joinable!(orders -> tenants (tenant_id));
diesel::joinable!(order_items -> orders (order_id));
diesel::joinable!(order_refunds -> orders (order_id));
diesel::allow_tables_to_appear_in_same_query!(orders, order_items, order_refunds, tenants);

// ----- code releases (migration 2026-11-23-000050_releases) ---------------------------------

diesel::table! {
    mp_authorizations (tenant_id) {
        tenant_id -> BigInt,
        status -> Text,
        authorizer_appid -> Text,
        refresh_token_enc -> Text,
        nickname -> Nullable<Text>,
        user_name -> Nullable<Text>,
        func_info -> Text,
        authorized_at -> Timestamp,
        revoked_at -> Nullable<Timestamp>,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    mp_authorization_attempts (state_hash) {
        state_hash -> Text,
        tenant_id -> BigInt,
        pre_auth_code -> Text,
        created_by -> BigInt,
        created_at -> Timestamp,
        expires_at -> Timestamp,
    }
}

diesel::table! {
    mp_verify_ticket (id) {
        id -> Integer,
        ticket_enc -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    mp_events (event_id) {
        event_id -> Text,
        kind -> Text,
        received_at -> Timestamp,
    }
}

diesel::table! {
    mp_packages (sha256) {
        sha256 -> Text,
        size -> BigInt,
        project_root -> Text,
        path -> Text,
        tenant_id -> Nullable<BigInt>,
        created_at -> Timestamp,
    }
}

diesel::table! {
    mp_package_contents (sha256) {
        sha256 -> Text,
        content -> Binary,
    }
}

diesel::table! {
    mp_upload_tasks (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        source_kind -> Text,
        source_template_id -> Nullable<BigInt>,
        ext_json -> Nullable<Text>,
        package_sha256 -> Nullable<Text>,
        package_size -> Nullable<BigInt>,
        version -> Text,
        description -> Text,
        status -> Text,
        template_id -> Nullable<BigInt>,
        errcode -> Nullable<BigInt>,
        error -> Nullable<Text>,
        created_by -> BigInt,
        created_at -> Timestamp,
        started_at -> Nullable<Timestamp>,
        finished_at -> Nullable<Timestamp>,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    mp_audit_tasks (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        upload_task_id -> BigInt,
        version -> Text,
        auditid -> BigInt,
        status -> Text,
        reason -> Nullable<Text>,
        screenshots -> Text,
        submitted_at -> Timestamp,
        decided_at -> Nullable<Timestamp>,
        gray_percentage -> Nullable<Integer>,
        released_at -> Nullable<Timestamp>,
        created_by -> BigInt,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    mp_release_tasks (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        audit_task_id -> Nullable<BigInt>,
        kind -> Text,
        version -> Nullable<Text>,
        gray_percentage -> Nullable<Integer>,
        status -> Text,
        errcode -> Nullable<BigInt>,
        errmsg -> Nullable<Text>,
        created_by -> BigInt,
        created_at -> Timestamp,
    }
}

diesel::joinable!(mp_authorizations -> tenants (tenant_id));
diesel::joinable!(mp_authorization_attempts -> tenants (tenant_id));
diesel::joinable!(mp_upload_tasks -> tenants (tenant_id));
diesel::joinable!(mp_audit_tasks -> tenants (tenant_id));
diesel::joinable!(mp_release_tasks -> tenants (tenant_id));
diesel::joinable!(mp_audit_tasks -> mp_upload_tasks (upload_task_id));
diesel::joinable!(mp_release_tasks -> mp_audit_tasks (audit_task_id));
diesel::joinable!(mp_package_contents -> mp_packages (sha256));
diesel::allow_tables_to_appear_in_same_query!(
    mp_authorizations,
    mp_authorization_attempts,
    mp_upload_tasks,
    mp_audit_tasks,
    mp_release_tasks,
    mp_packages,
    mp_package_contents,
    tenants
);

// ----- release campaigns (migration 2026-12-01-000100_release_campaigns) --------------------

diesel::table! {
    mp_campaigns (id) {
        id -> BigInt,
        name -> Text,
        partner_id -> Nullable<BigInt>,
        status -> Text,
        template_id -> BigInt,
        version -> Text,
        description -> Text,
        version_desc -> Nullable<Text>,
        ext_json -> Text,
        waves -> Text,
        current_wave -> Nullable<Integer>,
        auto_advance -> Bool,
        max_rejections -> Integer,
        domains -> Nullable<Text>,
        privacy -> Nullable<Text>,
        paused_reason -> Nullable<Text>,
        tenant_total -> Integer,
        created_by -> BigInt,
        created_at -> Timestamp,
        started_at -> Nullable<Timestamp>,
        finished_at -> Nullable<Timestamp>,
        revision -> BigInt,
    }
}

diesel::table! {
    mp_campaign_tenants (campaign_id, tenant_id) {
        campaign_id -> BigInt,
        tenant_id -> BigInt,
        authorizer_appid -> Nullable<Text>,
        wave -> Nullable<Integer>,
        status -> Text,
        upload_task_id -> Nullable<BigInt>,
        audit_task_id -> Nullable<BigInt>,
        release_task_id -> Nullable<BigInt>,
        reason -> Nullable<Text>,
        errcode -> Nullable<BigInt>,
        attempts -> Integer,
        next_at -> Nullable<Timestamp>,
        updated_at -> Timestamp,
        revision -> BigInt,
        active -> Bool,
    }
}

diesel::joinable!(mp_campaigns -> partners (partner_id));
diesel::joinable!(mp_campaign_tenants -> mp_campaigns (campaign_id));
diesel::joinable!(mp_campaign_tenants -> tenants (tenant_id));
diesel::allow_tables_to_appear_in_same_query!(mp_campaigns, mp_campaign_tenants, tenants);
diesel::allow_tables_to_appear_in_same_query!(mp_campaigns, partners);
diesel::allow_tables_to_appear_in_same_query!(mp_campaign_tenants, partners);
diesel::allow_tables_to_appear_in_same_query!(payment_shares, payment_sharings, tenants);
diesel::allow_tables_to_appear_in_same_query!(payment_shares, payment_transactions);

// ----- discrepancies to resolve (migration 2026-12-13-000100_discrepancies) -----------------

diesel::table! {
    payment_discrepancies (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        kind -> Text,
        payment_id -> BigInt,
        out_trade_no -> Text,
        share_id -> Nullable<BigInt>,
        return_id -> Nullable<BigInt>,
        description -> Text,
        status -> Text,
        action -> Nullable<Text>,
        note -> Nullable<Text>,
        resolved_by -> Nullable<BigInt>,
        out_refund_no -> Nullable<Text>,
        created_at -> Timestamp,
        resolved_at -> Nullable<Timestamp>,
    }
}

diesel::allow_tables_to_appear_in_same_query!(payment_discrepancies, tenants);

// ----- events for our users' systems (migration 2026-12-16-000100_events) ---------------------

diesel::table! {
    events (id) {
        id -> BigInt,
        #[sql_name = "type"]
        kind -> Text,
        tenant_id -> Nullable<BigInt>,
        partner_id -> Nullable<BigInt>,
        subject_id -> Nullable<BigInt>,
        data -> Text,
        occurred_at -> Timestamp,
        created_at -> Timestamp,
    }
}

diesel::allow_tables_to_appear_in_same_query!(events, tenants);
