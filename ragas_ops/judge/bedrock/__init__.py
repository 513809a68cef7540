"""The `bedrock` judge kind: Amazon Bedrock's Converse API through boto3, IAM credentials."""
