#pragma once
// The one list of pstrain's messages. Whatever enumerates message types is
// generated from it: the MsgType enum, kMaxMsgType and MsgTypeName
// (frame.h), TypeOf and the EncodeMeta/DecodeMeta declarations
// (messages.h), ValidateFrame, and the fuzzer's decoders. To add a message,
// add a row here, its struct to messages.h, its codec to the .cc of its
// kind, its layout to share/doc/wire-format.md and a golden-bytes test. A
// kTensors message whose meta is not tensor_messages.cc's "u64 version,
// u32 count, descriptors" also needs its own walk in
// internal::ValidateTensorMeta (as module and push_batch have).
//
// PSTRAIN_WIRE_MESSAGES(X) calls X(value, Enum, name, Struct, Data) per row:
//   value   the u16 `type` on the wire. Never renumber or reuse one; retire
//           a row with a comment ("// 19 was kFoo, retired in version 4").
//   Enum    its MsgType enumerator.
//   name    its MsgTypeName, for logs and error messages.
//   Struct  its message struct in messages.h (namespace pstrain::wire).
//   Data    its DataSection: kNone, an empty data section; kTensors, the
//           bytes of every tensor descriptor in its meta, in order.
// A list of tokens: this header includes nothing and defines nothing else.

// clang-format off
#define PSTRAIN_WIRE_MESSAGES(X)                                              \
  /* both ways, first frame: role, rank, world_size */                        \
  X(1, kHello, "hello", Hello, kNone)                                         \
  /* reply: why a request was refused */                                      \
  X(2, kError, "error", ErrorMsg, kNone)                                      \
  /* worker -> server: ask for the job spec */                                \
  X(3, kGetJob, "get_job", GetJob, kNone)                                     \
  /* server -> worker: job spec as JSON */                                    \
  X(4, kJobSpec, "job_spec", JobSpecMsg, kNone)                               \
  /* worker -> server: the worker's model fingerprint */                      \
  X(5, kRegister, "register", Register, kNone)                                \
  /* reply with no content */                                                 \
  X(6, kAck, "ack", Ack, kNone)                                               \
  /* worker -> server: ask for the current parameters */                      \
  X(7, kPull, "pull", Pull, kNone)                                            \
  /* worker -> server: gradients; reply kParams */                            \
  X(8, kPushPull, "push_pull", PushPull, kTensors)                            \
  /* server -> worker: parameters of a version */                             \
  X(9, kParams, "params", Params, kTensors)                                   \
  /* worker -> server: finished, with its stats as JSON */                    \
  X(10, kDone, "done", Done, kNone)                                           \
  /* worker -> server: gradients; reply kAck (pull separately) */             \
  X(11, kPush, "push", Push, kTensors)                                        \
  /* client -> server, first frame under a token: its nonce */                \
  X(12, kAuthHello, "auth_hello", AuthHello, kNone)                           \
  /* server -> client: its nonce and its proof of the token */                \
  X(13, kChallenge, "challenge", Challenge, kNone)                            \
  /* client -> server: its proof of the token; reply kAck */                  \
  X(14, kAuth, "auth", Auth, kNone)                                           \
  /* server s > 0 -> master: where it listens; reply kAck */                  \
  X(15, kServerInfo, "server_info", ServerInfo, kNone)                        \
  /* server s > 0 -> master, at the end: its slices; reply kAck */            \
  X(16, kShard, "shard", Shard, kTensors)                                     \
  /* worker -> server while it computes; no reply */                          \
  X(17, kHeartbeat, "heartbeat", Heartbeat, kNone)                            \
  /* master's observer -> server: slices at a version; reply kShard */        \
  X(18, kSnapshot, "snapshot", Snapshot, kNone)                               \
  /* worker or server -> master: ask for the job's TorchScript module */      \
  X(19, kGetModule, "get_module", GetModule, kNone)                           \
  /* master -> asker: the job's TorchScript module, its bytes as data */      \
  X(20, kModule, "module", ModuleMsg, kTensors)                               \
  /* worker -> server (--placement server): a batch; reply kBatchDone */      \
  X(21, kPushBatch, "push_batch", PushBatch, kTensors)                        \
  /* server -> worker: the batch's step is in, its loss, whether to stop */   \
  X(22, kBatchDone, "batch_done", BatchDone, kNone)                           \
  /* worker -> server on its host: move onto shared memory? */                \
  X(23, kShmOffer, "shm_offer", ShmOffer, kNone)                              \
  /* server -> worker: where to hand the segment over, or why not */          \
  X(24, kShmTicket, "shm_ticket", ShmTicket, kNone)                           \
  /* server -> its standby: the step that made a version (snapshot reply) */  \
  X(25, kStepRecord, "step_record", StepRecord, kTensors)
// clang-format on
