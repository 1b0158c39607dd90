mod cosmos_emulator;
mod cosmos_store;
mod store_contract;
