// The shrink agreement's messages (agreement.h) on the wire: the body of a kAgree frame
// (heartbeat_frame.h), sent alone on a connection that proved the job key.
//   "VGAG" u32, version u16, kind u8, identifier str, round u32, from u32, to u32, seq u32,
//   from_view u8, exclude set, ok u8, root str, error str, views: u32 n, n x (rank u32,
//   from_view u8, exclude set);   set: u32 n, n x u32.
// Decoding bounds every count by the bytes left, so a stranger's count costs no memory.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "dfx/agreement.h"

namespace vigil::dfx {

enum class AgreeKind : uint8_t { kPropose = 1, kDecide = 2 };

struct AgreeMsg {
  AgreeKind kind = AgreeKind::kPropose;
  std::string identifier;
  uint32_t round = 0;
  uint32_t from = 0;
  uint32_t to = 0;
  uint32_t seq = 0;               // proposals: the sender's latest wins
  bool from_view = false;         // proposals
  std::set<uint32_t> exclude;     // proposals: E; decisions: the agreed set
  bool ok = false;                // decisions
  std::string root;               // decisions: HcclRootInfo bytes when agreed
  std::string error;              // decisions: why not
  std::vector<ShrinkView> views;  // decisions: what the decider heard
};

// The whole kAgree frame (header included).
std::vector<uint8_t> EncodeAgreeMsg(const AgreeMsg& m);
// A kAgree frame's body. False when it is not a whole message of this version.
bool DecodeAgreeMsg(const std::vector<uint8_t>& body, AgreeMsg* m);

}  // namespace vigil::dfx
