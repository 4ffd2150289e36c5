// Needle C++ API: needle::Model (a loaded .cact, shared and thread-safe) and
// needle::Session (tools, system facts, pinned spans, complete()/run(),
// reset, save/restore, retrieval) with needle::Envelope results.
// See src/agent/session.h for the full contract.
#pragma once

#include "agent/envelope.h"  // needle::Envelope, EnvelopeType
#include "agent/model.h"     // needle::Model
#include "agent/session.h"   // needle::Session, SessionOptions, Extract
#include "base/error.h"      // needle::Error, ErrorCode
