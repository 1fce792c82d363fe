//! A local stand-in for the messaging platform (WeChat), its pay platform, our third-party
//! platform (component) on it, and SMS / e-mail delivery. It answers the same wire format as the real services, so `atrium-wechat` runs
//! its real client code against it, in tests and in the embedded default.
//!
//! Mount it with [`Sandbox::configure`] under a prefix (the server uses `/sandbox`). The
//! platform API lives under `{prefix}/api` (website login's `/sns/oauth2/access_token`, the
//! mini-program's `/cgi-bin/token` and `/cgi-bin/message/subscribe/send`). Besides the
//! platform's own routes it offers control calls that play the other side:
//!
//! * `POST {prefix}/control/scan` — "a user scanned the QR code": body
//!   `{"qr_url": "...", "openid": "...", "unionid": "..."?, "follow": true?}`. The sandbox
//!   issues an authorisation code and, like the user's browser, calls the page's
//!   `redirect_uri?code=…&state=…` (unless `follow` is false). Answers
//!   `{"code", "redirect_url", "callback_status", "callback_body"}`.
//! * `POST {prefix}/control/subscriptions` — `{"openid": "...", "remaining": 0}`: how many
//!   subscribe messages that user still accepts (0 → the next send gets 43101; `null` →
//!   unlimited, the default).
//! * `POST {prefix}/control/fail` — `{"path": "/cgi-bin/message/subscribe/send", "errcode": -1,
//!   "times": 1}`: the next `times` calls to that platform path answer `errcode` (paths:
//!   [`INJECTABLE_PATHS`]).
//! * `POST {prefix}/control/expire-tokens` — every access token issued so far expires now, so
//!   the next business call gets 42001.
//! * `GET {prefix}/messages?touser=…` — subscribe messages accepted, newest last.
//! * `GET {prefix}/outbox?target=…` — codes and texts "delivered" by SMS or e-mail, newest last.
//!
//! Each control call has a Rust twin on [`Sandbox`] for in-process tests.
//!
//! # The pay platform
//!
//! The pay platform (API v3) lives under `{prefix}/pay`: with the server's `/sandbox` prefix
//! the pay client's base URL (`WechatPayConfig::base_url`) is `<public url>/sandbox/pay`, and
//! the client runs unchanged. Every request under `{prefix}/pay/v3/…` must be signed by a
//! merchant registered with the sandbox (`Authorization: WECHATPAY2-SHA256-RSA2048 mchid=…,
//! nonce_str=…,timestamp=…,serial_no=…,signature=…` over `METHOD\nPATH_AND_QUERY\nTIMESTAMP\n
//! NONCE\nBODY\n`, timestamp within 300 s, serial of the merchant's certificate); otherwise
//! 401 `{"code":"SIGN_ERROR"}`. Every answer, errors included, is signed with the sandbox's
//! platform key in public-key mode (`Wechatpay-Timestamp`, `-Nonce`, `-Signature`, and
//! `-Serial: PUB_KEY_ID_…`), except the bill download, which is vouched for by its SHA-1.
//!
//! * `POST /v3/pay/transactions/jsapi` → `{prepay_id}`; checks appid/mchid, `out_trade_no`
//!   (6–32 of `0-9A-Za-z_-*`), `description` ≤ 127 bytes, `attach` ≤ 128, `amount.total` ≥ 1,
//!   `notify_url` (https, or http to a loopback host; no query). The same number again with
//!   the same details gets the same `prepay_id`; with other details 400 `INVALID_REQUEST`.
//! * `GET /v3/pay/transactions/out-trade-no/{no}?mchid=` and
//!   `GET /v3/pay/transactions/id/{transaction_id}?mchid=` (404 `ORDER_NOT_EXIST`);
//!   `POST /v3/pay/transactions/out-trade-no/{no}/close {mchid}` → 204 (a paid order: 400
//!   `ORDERPAID`). `trade_state` goes `NOTPAY` → `SUCCESS` | `PAYERROR` | `CLOSED`,
//!   `PAYERROR` → `SUCCESS` | `CLOSED`, and `SUCCESS` → `REFUND` once a refund is accepted.
//! * `POST /v3/refund/domestic/refunds` → the refund, `PROCESSING` (at most what is left to
//!   refund, at most 50 per order, `out_refund_no` reused → the same refund);
//!   `GET /v3/refund/domestic/refunds/{out_refund_no}` (404 `RESOURCE_NOT_EXISTS`).
//! * `GET /v3/bill/tradebill?bill_date=YYYY-MM-DD&bill_type=ALL` → `{hash_type: "SHA1",
//!   hash_value, download_url}`, or 400 `NO_STATEMENT_EXIST` for a day without payments or
//!   refunds; `GET /v3/billdownload/file?token=…` serves the CSV (values led by backticks).
//! * `/v3/certificates` does not exist (404), as for merchants in public-key mode.
//!
//! Service-provider mode (服务商): a registered merchant acts as the provider of its
//! sub-merchants (`control/sub-merchant` below). It signs every partner call itself, names
//! itself as `sp_mchid` (another value: 400 `PARAM_ERROR`) and the sub-merchant as `sub_mchid`
//! (not one of its own: 400 `INVALID_REQUEST` "受理关系不存在"). A sub-merchant's orders and
//! refunds are its own: direct calls never reach them, nor partner calls of another provider.
//!
//! * `POST /v3/pay/partner/transactions/jsapi` `{sp_appid, sp_mchid, sub_appid?, sub_mchid,
//!   description, out_trade_no, time_expire?, notify_url, attach?, settle_info?:
//!   {profit_sharing}, amount: {total, currency}, payer: {sub_openid} | {sp_openid}}` →
//!   `{prepay_id}`; the order's checks as above, `sp_appid` the provider's appid and
//!   `sub_appid` the sub-merchant's registered one (else 400 `APPID_MCHID_NOT_MATCH`);
//!   `payer.sub_openid` when `sub_appid` is given, `payer.sp_openid` otherwise.
//! * `GET /v3/pay/partner/transactions/out-trade-no/{no}?sp_mchid=&sub_mchid=` and
//!   `GET /v3/pay/partner/transactions/id/{transaction_id}?sp_mchid=&sub_mchid=`;
//!   `POST /v3/pay/partner/transactions/out-trade-no/{no}/close {sp_mchid, sub_mchid}` → 204.
//!   Transactions, as answers and as `TRANSACTION.*` resources, then carry `sp_appid`,
//!   `sp_mchid`, `sub_appid` (when given), `sub_mchid` and `payer: {sub_openid | sp_openid}`.
//! * `POST /v3/refund/domestic/refunds` with `sub_mchid` in the body, `GET
//!   /v3/refund/domestic/refunds/{no}?sub_mchid=`, `GET /v3/bill/tradebill?…&sub_mchid=`: the
//!   sub-merchant's refunds and bill (the provider under 商户号, the sub-merchant under
//!   特约商户号). Refunds and `REFUND.*` resources carry `sub_mchid` (resources `sp_mchid` too).
//! * `GET /v3/profitsharing/merchant-configs/{sub_mchid}` → `{sub_mchid, max_ratio}`: the
//!   largest share of a payment (basis points) the provider may split off that sub-merchant's
//!   payments.
//! * Profit sharing (分账), each call naming `sub_mchid`: `POST
//!   /v3/profitsharing/receivers/add` (a receiver's `name` sealed under the platform key,
//!   RSA-OAEP, with `Wechatpay-Serial` naming it; a `MERCHANT_ID` needs one), `POST
//!   /v3/profitsharing/orders` (a share, `PROCESSING`; the same `out_order_no` again is the
//!   same request), `GET /v3/profitsharing/orders/{out_order_no}?sub_mchid=&transaction_id=`
//!   (the first query finishes it) and `POST /v3/profitsharing/orders/unfreeze` (the rest to
//!   the sub-merchant). A share is refused within a minute of the payment (429
//!   `FREQUENCY_LIMITED`) and past the sub-merchant's `max_ratio` or what refunds left (400
//!   `INVALID_REQUEST`); the rules are listed in `pay/sharing.rs`. A share also finishes by
//!   itself 1 s after it was made ([`Sandbox::set_share_finish_after`]), once, whichever of
//!   that, its query or an unfreeze comes first. Each line of a finished share is then
//!   notified to the payment's `notify_url` like a payment (`PROFITSHARING.SUCCESS` or
//!   `PROFITSHARING.CLOSED`, summary `分账`, resource `{sp_mchid, sub_mchid, transaction_id,
//!   order_id, out_order_no, receiver: {type, account, amount, description}, success_time}`,
//!   an event id each); an unfreeze sends none. `POST /v3/profitsharing/return-orders
//!   {sub_mchid, out_order_no, out_return_no, return_mchid, amount, description}` gives part of
//!   a merchant receiver's `SUCCESS` line back to the sub-merchant (a person's line never: 400
//!   `INVALID_REQUEST` "不支持分账给个人的分账单回退"), at most the line's amount over its
//!   returns not failed, 50 per share request; `SUCCESS` at once, and the same `out_return_no`
//!   again answers that return, as does `GET
//!   /v3/profitsharing/return-orders/{out_return_no}?sub_mchid=&out_order_no=`, which never
//!   makes one (unknown, or of another share request: 404 `RESOURCE_NOT_EXISTS`). What was
//!   shared off stays the receivers' until returned: a refund of a sub-merchant's payment
//!   larger than what the sub-merchant holds of it (paid − refunds − shares not closed +
//!   returns `SUCCESS`) is refused, 403 `NOT_ENOUGH` "基本账户余额不足，请充值后重新发起".
//! * Notifications of a sub-merchant's orders and refunds are sealed with the provider's APIv3
//!   key; `wx.requestPayment`'s parameters are signed by the provider, `appId` the `sub_appid`
//!   the order named, else the `sp_appid`.
//!
//! Its control calls (Rust twins in brackets):
//!
//! * `POST {prefix}/control/merchant` — `{"mchid", "appid"}` → `{mchid, appid,
//!   private_key_pem, certificate_pem, merchant_serial_no, api_v3_key,
//!   platform_public_key_pem, platform_public_key_id, not_after}`: everything a tenant uploads
//!   as its payment configuration ([`Sandbox::register_merchant`]).
//! * `POST {prefix}/control/sub-merchant` — `{"sp_mchid", "sub_mchid", "sub_appid"?,
//!   "max_ratio"?}` → `{sp_mchid, sub_mchid, sub_appid, max_ratio}`: `sub_mchid` becomes a sub-merchant
//!   of the registered merchant `sp_mchid`, paying in its own mini-program `sub_appid` when
//!   given; the same again answers the same; a merchant's `mchid` or another provider's
//!   sub-merchant is refused ([`Sandbox::register_sub_merchant`]). `max_ratio` is the largest
//!   profit share in basis points (3000 unless given; [`Sandbox::set_max_ratio`] changes it
//!   as the sub-merchant would on the platform). The `mchid` the other control calls take may name a
//!   sub-merchant.
//! * `POST {prefix}/control/pay` — `{"out_trade_no", "result": "SUCCESS" | "PAYERROR",
//!   "mchid"?, "pay_params"?, "paid_at"?}`: the payer pays. With `pay_params` (what
//!   `wx.requestPayment` gets) the sandbox checks them as the payer's app would, `paySign`
//!   included. `paid_at` (RFC 3339) dates the payment earlier, so it shows on that day's
//!   trade bill. `SUCCESS` sends a `TRANSACTION.SUCCESS` notification; `PAYERROR`, as on the
//!   platform, none ([`Sandbox::pay_order`], [`Sandbox::pay_with_params`]).
//! * `POST {prefix}/control/refund` — `{"out_refund_no", "result": "SUCCESS" | "ABNORMAL" |
//!   "CLOSED", "mchid"?}`: a `PROCESSING` refund settles and a `REFUND.*` notification follows
//!   ([`Sandbox::settle_refund`]). Both answer a [`SettleReport`] with the notification's
//!   first delivery attempt.
//! * `POST {prefix}/control/notify-fail` — `{"times": N}`: the next N notifications are sent
//!   twice, the copy out of order ([`Sandbox::fail_next_notifications`]).
//! * `POST {prefix}/control/notify-lose` — `{"times": N}`: the next N notifications are lost,
//!   never sent ([`Sandbox::lose_next_notifications`]); a query, the settle job or the
//!   reconciliation must find the payment.
//! * `POST {prefix}/control/notify-requests` — `{"out_trade_no", "count", "mchid"?}`: `count`
//!   signed notifications of a paid order, each with its own event id, returned instead of
//!   sent, for load tests ([`Sandbox::signed_notifications`]).
//! * `POST {prefix}/control/pay-fail` — `{"path": "/v3/pay/transactions/jsapi", "status": 500,
//!   "code"?: "SYSTEM_ERROR", "times"?: 1}`: the next calls of that path (a trailing `*`
//!   matches a start) answer that status and code ([`Sandbox::fail_next_pay_call`]).
//! * `GET {prefix}/control/notifications?out_trade_no=…` — notifications sent, with their
//!   attempts, oldest first ([`Sandbox::pay_notifications`]).
//! * `GET {prefix}/control/profitsharing?sub_mchid=&out_trade_no=` — what the platform holds of
//!   the profit sharing of a sub-merchant's transaction: the receivers added for the
//!   sub-merchant, the transaction's share and unfreeze requests with their lines and when and
//!   by what each finished (`finished_at`, `finished_by`: `timer`, `query` or `unfreeze`), each
//!   line's `returned`, `shared`, `finished`, `unfrozen` and the `returns` of its lines
//!   ([`Sandbox::profit_sharing`], a [`ProfitSharingView`]).
//! * `POST {prefix}/control/profitsharing/close-next` — `{"account", "fail_reason"}`: the next
//!   share line for that receiver account ends `CLOSED` with that reason
//!   ([`Sandbox::close_next_share`]).
//! * `POST {prefix}/control/profitsharing/rules` — `{"one_minute"?: bool, "finish_after_ms"?:
//!   0 to 60000, "notify"?: bool, "returns_processing"?: bool}` → the [`ShareRules`] in force,
//!   every field given: switches the rule that refuses a share within a minute of its payment
//!   ([`Sandbox::set_share_one_minute_rule`]), sets how long after it was made a share request
//!   finishes by itself (1000 by default; for requests made from then on;
//!   [`Sandbox::set_share_finish_after`]) and switches the `PROFITSHARING.*` notifications (on
//!   by default; [`Sandbox::set_share_notifications`]). `returns_processing` (off by default;
//!   [`Sandbox::set_returns_processing`]): a new return answers `PROCESSING` first, nothing
//!   given back yet, and the next call under its number finishes it. What is not given stays;
//!   nothing changes when a value is refused.
//! * `POST {prefix}/control/profitsharing/return-fail-next` — `{"account", "fail_reason"}`: the
//!   next return from merchant `account` answers `FAILED` with that reason
//!   (`ACCOUNT_ABNORMAL`, `BALANCE_NOT_ENOUGH`, `TIME_OUT_CLOSED`, `PAYER_ACCOUNT_ABNORMAL` or
//!   `INVALID_REQUEST`), nothing given back; once ([`Sandbox::fail_next_return`]).
//! * `POST {prefix}/control/profitsharing/tamper` — `{"out_order_no", "sub_mchid"?, "account",
//!   "result"?: "PENDING" | "SUCCESS" | "CLOSED", "amount"?: fen ≥ 0, "fail_reason"?}`: the
//!   platform's own record of that receiver's line of a finished share request changes, as its
//!   query answers it from then on (a `fail_reason` goes with `CLOSED` only; another result
//!   drops it), and the answer is the request as its query now answers it
//!   ([`Sandbox::tamper_share_line`]). `{"out_order_no", "sub_mchid"?, "forget": true}`: the
//!   platform forgets the request and its returns, whose queries then answer 404
//!   `RESOURCE_NOT_EXISTS`; answers `{sub_mchid, out_order_no, forgotten: true, returns}`
//!   ([`Sandbox::forget_share`]). `sub_mchid` is needed only when several sub-merchants have
//!   the number.
//! * `POST {prefix}/control/profitsharing/tamper-return` — `{"out_return_no", "sub_mchid"?,
//!   "result"?: "PROCESSING" | "SUCCESS" | "FAILED", "amount"?: fen ≥ 0, "fail_reason"?}`: the
//!   platform's own record of that return changes, as its query (and its number's POST)
//!   answers it from then on; it stays as set, one left `PROCESSING` is not finished by asking
//!   again. Answers the return as its query now does ([`Sandbox::tamper_return`]).
//!
//! Notifications are POSTed to the order's (or the refund's) `notify_url` with the platform's
//! body, the resource sealed with AEAD_AES_256_GCM under the merchant's APIv3 key, signed with
//! the platform key; an attempt that gets no 2xx within 5 s is retried after 1 s, 3 s and
//! 10 s ([`Sandbox::set_notify_retry_delays`]), then given up.
//!
//! # The third-party platform
//!
//! The sandbox also plays our third-party platform (component) and the mini-programs that
//! authorise it. Its calls sit beside the mini-program API, so `WechatOpenConfig::api_base` is
//! `<public url>/sandbox/api` and `page_base` `<public url>/sandbox/mp`; the client runs
//! unchanged. Its credentials are a [`ComponentConfig`]: by default [`SANDBOX_COMPONENT_APPID`]
//! with a random secret, token and EncodingAESKey ([`Sandbox::component`] tells them;
//! [`Sandbox::set_component`] puts Atrium's own), and pushes go to Atrium once told where
//! ([`Sandbox::push_events_to`]`(<atrium public url>)`: [`ATRIUM_EVENTS_PATH`] and
//! [`ATRIUM_MESSAGES_PATH`]). Answers are HTTP 200 with an `errcode` on failure; a GET-only
//! call POSTed gets 43001, a POST-only one called with GET 43002, an empty POST body 44002,
//! a body that is not a JSON object 47001, an unknown path 40066.
//!
//! * `POST /cgi-bin/component/api_component_token` `{component_appid, component_appsecret,
//!   component_verify_ticket}` → `{component_access_token, expires_in: 7200}`: wrong appid
//!   40013, wrong secret 40125, a ticket the sandbox did not push (it accepts its ten newest)
//!   61006.
//! * `?component_access_token=` (missing 41001, unknown 40001, expired 42001), body
//!   `{component_appid, …}` (another appid 40013):
//!   `api_create_preauthcode` → `{pre_auth_code: "preauthcode@@@…", expires_in: 1800}`;
//!   `api_query_auth {authorization_code}` → `{authorization_info: {authorizer_appid,
//!   authorizer_access_token, expires_in, authorizer_refresh_token, func_info:
//!   [{funcscope_category: {id}}]}}`, each code once (used or unknown 61009, expired 61010);
//!   `api_authorizer_token {authorizer_appid, authorizer_refresh_token}` →
//!   `{authorizer_access_token, expires_in, authorizer_refresh_token}` (wrong refresh token
//!   61023, revoked 61003); `api_get_authorizer_info {authorizer_appid}` →
//!   `{authorizer_info: {nick_name, user_name: "gh_…", …}, authorization_info}`.
//! * The template library, `?access_token=<component token>`: `GET /wxa/gettemplatedraftlist`
//!   → `{draft_list: [{draft_id, user_version, user_desc, create_time}]}`; `POST
//!   /wxa/addtotemplate {draft_id, template_type}` (unknown draft 85064, 200 templates 85065);
//!   `GET /wxa/gettemplatelist` → `{template_list: [{template_id, …}]}`, starting with
//!   templates 1 and 2.
//! * Code management, `?access_token=<authorizer token>` (revoked 61003, permission set 18 not
//!   granted 61007): `POST /wxa/commit`, `submit_audit` (→ `auditid`), `get_auditstatus
//!   {auditid}` (→ `status` 0 passed, 1 rejected, 2 auditing, 4 delayed, `reason`,
//!   `screenshot: "a|b"`), `release {}`, `grayrelease {gray_percentage}`, `getversioninfo
//!   {}`; `GET /wxa/getgrayreleaseplan`, `revertgrayrelease`, `revertcoderelease`
//!   (`?app_version=`, or `?action=get_history_version` → `version_list`), `get_qrcode`
//!   (`?path=`; the JPEG [`EXPERIENCE_QR_JPEG`] as `image/jpeg`, or JSON). The rules and their
//!   errcodes (85009, 85086, 85019/85020, 85081/85082, 87011/87012, …) are listed in
//!   `open/code.rs`.
//! * Settings and quota, `?access_token=<authorizer token>` (the same 61003/61007 checks; rules
//!   in `open/settings.rs`): `POST /wxa/modify_domain {action: "get" | "set" | "add" |
//!   "delete", requestdomain, wsrequestdomain, uploaddomain, downloaddomain}` and `POST
//!   /wxa/setwebviewdomain {action, webviewdomain}` → the lists (an entry other than `https://`
//!   and a host name, `wss://` too for sockets, 85017; over 200 entries in a list, 100 web-view
//!   domains, 85016; another action 40097); `POST /cgi-bin/component/getprivacysetting
//!   {privacy_ver: 2}` → `{owner_setting, setting_list, …}` and `setprivacysetting {privacy_ver:
//!   2, owner_setting, setting_list}`, with the authorizer token despite their path (another
//!   `privacy_ver`, no contact or `notice_method`, a bad item: 40097); `GET /wxa/get_category`
//!   (a new mini-program has one category, 工具 > 效率); `GET /wxa/queryquota` → `{rest, limit,
//!   speedup_rest, speedup_limit}`, the component's quota (100 audits and 10 speed-ups to start
//!   with): each accepted `submit_audit` spends one `rest` (none left: 85085, nothing spent);
//!   `POST /wxa/speedupaudit {auditid}` spends a speed-up (not a running audit of the
//!   mini-program 85021, none left 87013); `GET /wxa/undocodeaudit` withdraws the running audit,
//!   `get_auditstatus` then says 3 (none running 85012), and gives no quota back.
//! * `POST /ci/upload?appid=&version=&desc=` with a zip body: what [`SandboxUploader`] (the
//!   domain's `CodeUploader` in sandbox mode) sends instead of running `miniprogram-ci`. Read
//!   as it arrives, at most 20 MiB (85044); not a zip 47001; another appid than the
//!   template-development one 40013; → `{draft_id, size, sha256, subPackageInfo: [{name:
//!   "__FULL__", size}]}` and a draft `user_version` = version, `user_desc` = desc.
//! * `GET {prefix}/mp/cgi-bin/componentloginpage?component_appid&pre_auth_code&redirect_uri&
//!   auth_type` — the authorisation page, a small HTML page; the sandbox remembers the
//!   redirect. 400 for another component, an unknown, used or expired code.
//!
//! Pushes are encrypted as the platform does (AES-256-CBC with the EncodingAESKey,
//! `msg_signature` over the sorted token, timestamp, nonce and `Encrypt`), POSTed as XML to
//! `<url>?signature&timestamp&nonce&encrypt_type=aes&msg_signature`; Atrium must answer 2xx
//! with `success` (or nothing), otherwise the push is retried after 1 s, 3 s and 10 s
//! ([`Sandbox::set_push_retry_delays`]). Each push and Atrium's answers are recorded
//! ([`ComponentPush`]). `CreateTime`s strictly rise, so no two pushes share an event id.
//!
//! Its control calls (Rust twins in brackets):
//!
//! * `POST {prefix}/control/verify-ticket` — pushes a new `component_verify_ticket` now →
//!   the [`ComponentPush`] ([`Sandbox::push_verify_ticket`]; [`Sandbox::spawn_verify_ticket_pushes`]
//!   repeats it, as the platform does every 10 minutes).
//! * `POST {prefix}/control/authorize` — `{"pre_auth_code" | "authorize_url" | "tenant_id",
//!   "authorizer_appid", "nickname"?, "func_info"?, "follow"?, "push"?, "event_first"?}`: an
//!   admin scans the page. Issues an authorisation code, follows the redirect
//!   `redirect_uri?auth_code=…&expires_in=3600` like the browser when the redirect is known
//!   (the page was opened, or `authorize_url` given), and pushes `authorized`
//!   (`updateauthorized` the second time) with `AuthorizerAppid`, `AuthorizationCode`,
//!   `PreAuthCode` → [`AuthorizeReport`] ([`Sandbox::authorize`]). `tenant_id` needs the
//!   server's resolver ([`Sandbox::resolve_tenant_links`]); without it 400.
//! * `POST {prefix}/control/audit` — `{"authorizer_appid", "auditid"?, "result": "passed" |
//!   "rejected" | "delayed", "reason"?, "screenshots"?, "push"?}` → [`AuditReport`]; the
//!   `weapp_audit_*` event goes to the message URL addressed to the mini-program's `gh_…`, or
//!   is lost with `"push": false` ([`Sandbox::decide_audit`]).
//! * `POST {prefix}/control/unauthorize` — `{"authorizer_appid", "push"?}`: the admin revokes;
//!   `unauthorized` is pushed ([`Sandbox::unauthorize`]).
//! * `GET {prefix}/control/events?kind=&authorizer_appid=` — pushes with their attempts
//!   ([`Sandbox::component_pushes`]); `GET {prefix}/control/miniprogram?appid=` — a
//!   mini-program's code state ([`Sandbox::miniprogram`]); `GET {prefix}/control/ci-uploads`
//!   ([`Sandbox::ci_uploads`]).
//! * `POST {prefix}/control/quota` — `{"rest", "limit"?, "speedup_rest"?, "speedup_limit"?}`,
//!   each 0 to 1,000,000, a rest not above its limit (a limit not given stays, or rises to the
//!   rest) → the quota `{rest, limit, speedup_rest, speedup_limit}`
//!   ([`Sandbox::set_audit_quota`]).
//! * `POST {prefix}/control/audit-policy` — `{"result": "passed" | "rejected" | "delayed" |
//!   "manual", "after_ms"?: 0, "reject_appids"?: ["wx…"], "reason"?}` → the [`AuditPolicy`]
//!   now in force, every field given: from then on each new audit is decided by the platform
//!   itself `after_ms` (at most a day) after its submit, its event pushed as `control/audit`
//!   with `"push": true` pushes it; the mini-programs of `reject_appids` are rejected (with
//!   `reason`) whatever `result` says; `manual`, the default, leaves the others to
//!   `control/audit`. An audit decided or withdrawn before its time is left as it is
//!   ([`Sandbox::set_audit_policy`]).
//! * `POST {prefix}/control/authorize-many` — `{"tenant_ids": [..]}`, 1 to 5,000 positive ids,
//!   each once: authorises each tenant in turn as `control/authorize` with `tenant_id` does, its
//!   mini-program being [`tenant_appid`] (`wxsandbox` and the id on nine digits) →
//!   [`AuthorizeManyReport`] `{"authorized": [{tenant_id, authorizer_appid}], "failed":
//!   [{tenant_id, reason}]}`, a tenant failing when it has no link or Atrium neither answered
//!   its callback with 2xx nor took the event; without the server's resolver 400
//!   ([`Sandbox::authorize_many`]).
//! * `control/fail` takes every path above but the settings and quota calls (see
//!   [`INJECTABLE_PATHS`]); `control/expire-tokens` expires component and authorizer tokens
//!   too.
//!
//! [`Sandbox::configure_settings_controls`] mounts `control/quota`, `control/audit-policy` and
//! `control/authorize-many`.

mod mp;
mod open;
mod outbox;
mod pay;
mod platform;

pub use mp::{INJECTABLE_PATHS, SubscribeRecord, TemplateValue};
pub use open::{
    ATRIUM_EVENTS_PATH, ATRIUM_MESSAGES_PATH, AuditDecision, AuditPolicy, AuditReport, AuditResult, AuditView, AuthorizeManyReport,
    AuthorizeReport, AuthorizeRequest, AuthorizedTenant, BoxFuture, CODE_MANAGEMENT_FUNC, CategoryView, CiUpload, CommittedView,
    ComponentConfig, ComponentPush, DEFAULT_FUNC_INFO, DomainsView, EXPERIENCE_QR_JPEG, FailedTenant, GrayView, MAX_AUTHORIZE_MANY,
    MiniProgramSnapshot, PlatformQuota, PolicyResult, PrivacyItemView, PrivacyOwnerView, PrivacyView, PushAttempt, QuotaRequest,
    SandboxUploader, TenantLinkResolver, UnauthorizeReport, VersionView, tenant_appid,
};
pub use outbox::{OutboxMessage, SandboxOutbox};
pub use pay::{
    DEFAULT_MAX_RATIO, DEFAULT_SHARE_FINISH_AFTER, HOLD_DUPLICATE, MAX_REFUNDS_PER_ORDER, MAX_RETURNS_PER_SHARE_ORDER,
    MAX_SHARE_FINISH_AFTER, MAX_SHARE_ORDERS_PER_TRANSACTION, MAX_SHARE_RECEIVERS, NotifyAttempt, PayNotification, PaymentResult,
    ProfitSharingView, RETURN_FAIL_REASONS, RefundResult, SandboxMerchant, SandboxSubMerchant, SettleReport, ShareLineView, ShareOrderView,
    ShareReceiverView, ShareReturnView, ShareRules, SignedNotification, UnfrozenView,
};
pub use platform::Sandbox;

/// An HTTP client over one TLS context for the whole process. A context loads the system's CA
/// bundle, which takes milliseconds with OpenSSL 3.0, and the tests start hundreds of sandboxes.
pub(crate) fn http_client() -> reqwest::Client {
    static SHARED: std::sync::OnceLock<Option<native_tls::TlsConnector>> = std::sync::OnceLock::new();
    match SHARED.get_or_init(|| native_tls::TlsConnector::new().ok()) {
        Some(tls) => reqwest::Client::builder().tls_backend_preconfigured(tls.clone()).build().unwrap_or_default(),
        None => reqwest::Client::new(),
    }
}

/// The website-login app the sandbox knows by default.
pub const SANDBOX_LOGIN_APPID: &str = "wx_sandbox_login";
/// The secret of [`SANDBOX_LOGIN_APPID`].
pub const SANDBOX_LOGIN_SECRET: &str = "sandbox-login-secret";

/// The mini-program app the sandbox knows by default (access tokens, subscribe messages).
pub const SANDBOX_MP_APPID: &str = "wx_sandbox_mp";
/// The secret of [`SANDBOX_MP_APPID`].
pub const SANDBOX_MP_SECRET: &str = "sandbox-mp-secret";
/// The third-party platform (component) the sandbox plays by default; its secret, token and
/// EncodingAESKey are drawn at random ([`Sandbox::component`] tells them).
pub const SANDBOX_COMPONENT_APPID: &str = "wx_sandbox_component";
/// The template-development mini-program packages are uploaded to by default.
pub const SANDBOX_TEMPLATE_DEV_APPID: &str = "wx_sandbox_tpl_dev";

/// The one subscribe-message template id the sandbox accepts (others get 40037): the pay-slip
/// template, with keys `thing*` (at most 20 characters) and `amount*` (digits, optional
/// decimals) checked like the platform does.
pub const SANDBOX_PAYSLIP_TEMPLATE_ID: &str = "sandbox-payslip-template";
