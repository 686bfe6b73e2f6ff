// The plog line forms that are data: rows of data/formats/*.json, read by one engine. A row
// names the event kind it makes, the needles that gate it, and RE2 patterns whose named groups
// are the Event fields they fill (events.h: "rank", "remote_ip", "aux_time", ...). A new form is
// a new row, not a new branch. Two tables:
//
//   "plog_lines"   who a rank is and whom it waits for, tried before anything else:
//     kRankInfo     SetupAgent / hcclCommInitInfo / hcom init by file / HcclCommInitRootInfo
//                   success|failed: group, rank, rank_size, device (logical), local_device
//                   (physical id), local_ip (device NIC IP), local_server (server IP);
//                   "HcclGetRootInfo success": group, name "root";
//                   "[Vnic]Listen on ip[V] ... devPhyId[N]": name "vnic", ip V, local_device N
//     kWaitPeer     link-table rows (detail "socket"), "connected p2p timeout" (detail "p2p"),
//                   AICPU "[TaskException]base information" (detail "aicpu") and its opData
//                   line (detail "aicpu_op")
//     kRootInfoFail, kConnectedRanks, kCqeDetail (the "cqe err status" forms), kOpRetry,
//     kShrink, kEnv (HCCL_CONNECT_TIMEOUT echoes)
//
//   "fault_lines"  the records of a fault, tried after the screen-error and env-echo forms: the
//     heartbeat's crimer lines and HCCL's Cluster Exception Location, task exception reports,
//     runtime SDMA/AIV records, RoCE CQE errors, link and topology timeouts, missing ranks, bind
//     failures, consistency checks, transport errors, stuck traces, buffer OOMs, Key Info.
//
//   "screen_fields" the fields of a coded screen error's message (after "Title(EIxxxx): "), by
//     code: EI0013's local and peer, EI0002/EI0012's remote rank, stream, task, tag and
//     addresses, EI0005's parameter and both ends, EI0006/EI0015's ranks, ... A row lists its
//     codes instead of a kind; needles are optional there.
//
// Row keys: name, kind (an EventKind name), level ("any", or "error": ERROR and screen records
// only), module (the record's module must be this), needles (one must occur), requires (each
// must occur; an array item is a list of alternatives), unless (none may occur), patterns
// (tried in order; a group fills its field only while the field is unset), need (fields that
// must be filled for the row to hold), set (values for fields still unset after the patterns),
// append (text added to a field the patterns filled), example (a line of the form; tests read
// it). Rows are tried in order; the first that holds wins. A file also lists its "prefilter".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "diagnose/events.h"
#include "diagnose/record.h"

namespace vigil::diagnose {

// Whether an INFO record may hold a "plog_lines" form with level "any" (the cheap test first).
bool MayBeRankLine(std::string_view content);
// Fills *ev from the first "plog_lines" row that holds; false when none does.
bool ParseRankLine(const Record& r, Event* ev);

// Fills *ev from the first "fault_lines" row that holds; false when none does.
bool ParseFaultLine(const Record& r, Event* ev);

// Sets the fields of *ev (a coded screen error, ev->code set) that the first "screen_fields"
// row of its code reads from msg, the message after "Title(EIxxxx): " (over what the line's
// layout gave, e.g. the title in name for EI0005); the fields it does not read stay.
void ParseScreenFields(std::string_view msg, Event* ev);

// The "prefilter" of a table's file ("plog_lines" or "fault_lines"): short needles, one of which
// every record of a row of any level holds (checked when the rows load). The line parser's first
// filters for records that are not ERROR are made of them.
std::vector<std::string> FormPrefilter(std::string_view table);

// What loading the forms reported (a row with an unknown kind or field, a bad regex); a test
// asserts there is nothing.
const std::vector<std::string>& PlogFormErrors();
// The same for a forms file given as text (the tests' way to check what loading rejects).
std::vector<std::string> FormsFileErrors(std::string_view json_text);

}  // namespace vigil::diagnose
