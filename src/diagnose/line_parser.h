// Turns one record into a typed event or an op entry. Pure function of the record text: no
// state, no allocation for records that are not of interest, never reads outside the record.
#pragma once

#include <string_view>

#include "diagnose/events.h"
#include "diagnose/record.h"

namespace vigil::diagnose {

enum class Parsed : uint8_t { kNone, kEvent, kOp };

struct OpKey {
  std::string_view group;     // identifier from the tag ("AllReduce_<identifier>") or "comm:<ptr>"
  std::string_view comm_ptr;  // comm[0x...]
};

// Fills *ev (kEvent) or *op + *key (kOp). `loc` is copied into the result. *ev must be a fresh
// (default) Event: it is not cleared here, because clearing it per record is measurable.
Parsed ParseRecordContent(const Record& r, const Loc& loc, Event* ev, OpEntry* op, OpKey* key);

// "AllReduce_127.10.0.1%enp_60000_0_1761275812718970" → ("AllReduce", "127.10.0.1%enp_...").
void SplitTag(std::string_view tag, std::string_view* op, std::string_view* group);

// Byte size of a dtype name as logs print it ("float32" → 4); 0 when unknown.
int DtypeSize(std::string_view dtype);

}  // namespace vigil::diagnose
