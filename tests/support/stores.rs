//! Object-store emulators for the tests: their endpoints (required under
//! `DELTABUS_REQUIRE_EMULATORS`), fresh S3 buckets and Azure containers as tables.

use std::process::Command;

use deltabus::storage::{StorageOptions, Table};

/// The value of a service's environment variable (an emulator's endpoint, the broker, the
/// test Python), through the one required-tools switch ([`crate::support::required`]).
pub fn emulator(var: &str) -> Option<String> {
    let value = std::env::var(var).ok();
    crate::support::required(value.is_some(), &format!("{var} is not set"), "scripts/test.sh starts and sets it")
        .then_some(value)
        .flatten()
}

/// Creates a fresh container on Azurite (object_store cannot) and returns its name.
pub fn azure_container() -> String {
    let endpoint = emulator("DELTABUS_TEST_AZURE_ENDPOINT").expect("Azurite endpoint");
    let python = emulator("DELTABUS_TEST_PYTHON").expect("python for container creation");
    let container = format!("deltabus{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let conn = format!(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint={endpoint};"
    );
    let script = format!(
        "from azure.storage.blob import BlobServiceClient\nBlobServiceClient.from_connection_string({conn:?}, api_version='2021-08-06').create_container({container:?})"
    );
    let out = Command::new(&python).arg("-c").arg(script).output().unwrap();
    assert!(out.status.success(), "cannot create container: {}", String::from_utf8_lossy(&out.stderr));
    container
}

/// A table location in a fresh bucket of the S3 emulator (None when it is not running).
pub async fn s3_table() -> Option<Table> {
    let endpoint = crate::support::emulator("DELTABUS_TEST_S3_ENDPOINT")?;
    let bucket = crate::s3_emulator::new_bucket(&endpoint, "commit");
    let options = StorageOptions { options: crate::s3_emulator::s3_options(&endpoint), ..StorageOptions::default() };
    Some(Table::open(&format!("s3://{bucket}/t"), options).unwrap())
}

/// A table location in a fresh container of the Azure emulator (None when it is not running).
pub fn azure_table() -> Option<Table> {
    crate::support::emulator("DELTABUS_TEST_AZURE_ENDPOINT")?;
    let container = crate::support::azure_container();
    let options = StorageOptions {
        options: [("azure_storage_use_emulator".to_string(), "true".to_string())].into_iter().collect(),
        ..StorageOptions::default()
    };
    Some(Table::open(&format!("az://{container}/t"), options).unwrap())
}
