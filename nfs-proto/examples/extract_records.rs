//! Extracts the RPC records of the NFS (TCP port 2049) connections in a classic pcap file into
//! a records data file (`.rec`, format described in `tests/support/pcap.rs`).
//!
//! ```text
//! cargo run -p nfs-proto --example extract_records -- IN.pcap OUT.rec
//! ```

#[path = "../tests/support/pcap.rs"]
mod pcap;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        eprintln!("usage: extract_records IN.pcap OUT.rec");
        return ExitCode::from(2);
    };
    let records = match pcap::read_pcap_records(input) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("extract_records: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = pcap::write_records_file(output, &records) {
        eprintln!("extract_records: {e}");
        return ExitCode::FAILURE;
    }
    let conns = records.iter().map(|r| r.conn + 1).max().unwrap_or(0);
    let to_server = records.iter().filter(|r| r.from_client).count();
    let bytes: usize = records.iter().map(|r| r.data.len()).sum();
    println!(
        "{output}: {} records ({to_server} client->server, {} server->client), \
         {conns} connection(s), {bytes} bytes",
        records.len(),
        records.len() - to_server,
    );
    ExitCode::SUCCESS
}
