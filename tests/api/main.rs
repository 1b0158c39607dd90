mod cosmos_emulator;
mod store_contract;
