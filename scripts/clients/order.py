"""Drives a running Atrium with the Python client generated from its OpenAPI document
(openapi-python-client, package `atrium_client`): logs in as the platform administrator,
creates a tenant, then an order for it, and checks the answer. Run by scripts/clients.sh.

    ATRIUM_URL=http://127.0.0.1:8080 ATRIUM_ADMIN_PASSWORD=... python order.py

Only the generated functions and models are used: a request the document describes wrongly
fails here, either as an undocumented status (`raise_on_unexpected_status`) or in the
generated model's parsing of the answer.
"""

import os
import sys

from atrium_client import AuthenticatedClient, Client
from atrium_client.api.auth import auth_login
from atrium_client.api.orders import orders_create
from atrium_client.api.tenants import tenants_create
from atrium_client.models import (
    AuthLoginResponse200,
    NewOrder,
    NewTenant,
    OrdersCreateResponse200,
    OrderStatus,
    Password,
    PasswordMethod,
    TenantsCreateResponse200,
)


def fail(what: str, response) -> None:
    sys.exit(f"FAIL: {what}: HTTP {int(response.status_code)}: {response.content.decode(errors='replace')[:500]}")


def main() -> None:
    base_url = os.environ["ATRIUM_URL"]
    password = os.environ["ATRIUM_ADMIN_PASSWORD"]

    with Client(base_url=base_url, raise_on_unexpected_status=True) as anonymous:
        login = auth_login.sync_detailed(
            client=anonymous,
            body=Password(method=PasswordMethod.PASSWORD, username="admin", password=password),
        )
    if login.status_code != 200 or not isinstance(login.parsed, AuthLoginResponse200):
        fail("POST /api/v1/auth/login", login)
    token = login.parsed.data.access_token

    with AuthenticatedClient(base_url=base_url, token=token, raise_on_unexpected_status=True) as client:
        tenant = tenants_create.sync_detailed(
            client=client, body=NewTenant(name="Acme Ltd", credit_code="91350100M000100Y43")
        )
        if tenant.status_code != 200 or not isinstance(tenant.parsed, TenantsCreateResponse200):
            fail("POST /api/v1/tenants", tenant)
        tenant_id = tenant.parsed.data.id
        assert isinstance(tenant.parsed.data.payroll_policy.four_eyes, bool), tenant.content

        created = orders_create.sync_detailed(
            client=client, body=NewOrder(tenant_id=tenant_id, subject="Coffee beans", amount=8800)
        )
        if created.status_code != 200 or not isinstance(created.parsed, OrdersCreateResponse200):
            fail("POST /api/v1/orders", created)
        order = created.parsed.data
        assert order.status == OrderStatus.PENDING, order.status
        assert order.amount == 8800, order.amount
        assert order.tenant_id == tenant_id, (order.tenant_id, tenant_id)
        assert order.subject == "Coffee beans", order.subject

    print(f"order {order.id} ({order.order_no}): {order.status} {order.amount} fen for tenant {tenant_id}")


if __name__ == "__main__":
    main()
