//! A blog platform backend on the Azure Cosmos DB case study's V3 model, served as an Azure
//! Functions custom handler or standalone on an embedded store.

pub mod api;
pub mod auth;
pub mod blog;
pub mod changefeed;
pub mod domain;
pub mod error;
pub mod functions;
pub mod platform;
pub mod settings;
pub mod startup;
pub mod store;
pub mod telemetry;
pub mod transfer;
pub mod verify;
pub mod web;
