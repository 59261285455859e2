#!/bin/sh
# LocalStack init hook (runs when S3 is ready): the lake bucket the examples use.
set -eu
awslocal s3 mb s3://lake || true
echo "medallion: bucket s3://lake ready"
