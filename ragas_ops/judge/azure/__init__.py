"""The `azure` judge kind: Azure OpenAI, a deployment as the model, keys or Entra ID tokens."""
