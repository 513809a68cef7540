"""Azure OpenAI's settings (`AzureSpec`); `[judge]` keys of the config file (see
`config.JudgeSettings`). A settings module: it imports nothing of ragas_ops but the settings
toolkit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ragas_ops.settings_fields import setting

AzureAuth = Literal["key", "entra"]
ENTRA_SCOPE = "https://cognitiveservices.azure.com/.default"


@dataclass
class AzureSpec:
    """How the `azure` judge reaches its resource: which API, and with which credentials. The
    judge's `model` and `embedding_model` are the deployments' names; `base_url` the
    resource's endpoint (`https://<resource>.openai.azure.com`), else `$AZURE_OPENAI_ENDPOINT`."""

    api_version: str | None = setting(None, key="azure_api_version")
    """None: the v1 API (`{endpoint}/openai/v1/chat/completions`, the deployment in `model`),
    which takes no api-version; a version (`2024-10-21`): the older deployments URL
    (`{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...`), for a
    resource or a feature the v1 API does not serve yet."""
    auth: AzureAuth = setting("key", key="azure_auth")
    """`key`: the `api-key` header, from `$AZURE_OPENAI_API_KEY` (or the variable
    `judge.api_key_env` names, when set to another than OPENAI_API_KEY); `entra`: a Microsoft
    Entra ID bearer token, from `azure_token_provider`, refreshed before it expires."""
    token_provider: str | None = setting(None, key="azure_token_provider")
    """With `auth = entra`: `module:callable`, called with no argument, giving a token source
    (a callable taking the scope, returning an object with `token` and `expires_on` as
    azure-identity's `AccessToken`); None: azure-identity's `DefaultAzureCredential`
    (`pip install azure-identity`: managed identity, workload identity, the Azure CLI...)."""
    token_scope: str = setting(ENTRA_SCOPE, key="azure_token_scope")
    """The scope Entra ID tokens are asked for (Azure OpenAI's, by default)."""
