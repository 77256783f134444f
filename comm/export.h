// CLUSTERCOMM_API marks the public API: libclustercomm.so (.dylib) is compiled with
// -fvisibility=hidden, so only what carries it is exported and everything else (transports,
// rendezvous, algorithms) stays internal to the library. The static library links the same
// objects; hidden symbols resolve there as usual.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define CLUSTERCOMM_API __attribute__((visibility("default")))
#else
#define CLUSTERCOMM_API
#endif
