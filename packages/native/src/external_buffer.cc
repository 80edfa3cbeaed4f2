// An ArrayBuffer over memory this addon owns, of any length. N-API's napi_create_external_arraybuffer
// goes through Node's Buffer and stops at 4 GiB; a memory map of a larger .npy needs V8's own
// external backing store. The handle is handed back as a napi_value the way Node itself converts
// V8 handles (a napi_value is a pointer to the handle's slot in the current scope).
//
// These V8 functions are not part of N-API's stable ABI, and a prebuilt binary serves every Node
// from 20 on: they are bound lazily (at first call), so before the first call the process is asked
// whether it has them under these exact names (the names encode their parameter types). Where one
// is missing, maps over 4 GiB are refused with ERR_EXTERNAL_BUFFERS and @npyts/core reads instead.
#include <dlfcn.h>
#include <memory>
#include <node_api.h>
#include <v8.h>

namespace {
struct Release {
  void (*release)(void *hint);
  void *hint;
};

void Deleter(void *, size_t, void *data) {
  // V8 may call this on any thread; munmap and free are thread-safe.
  Release *r = static_cast<Release *>(data);
  r->release(r->hint);
  delete r;
}
}  // namespace

extern "C" int npyts_large_external_supported(void) {
  static const char *const names[] = {
      "_ZN2v87Isolate10GetCurrentEv",                                          // Isolate::GetCurrent()
      "_ZN2v811ArrayBuffer15NewBackingStoreEPvmPFvS1_mS1_ES1_",                // ArrayBuffer::NewBackingStore(data, length, deleter, hint)
      "_ZN2v811ArrayBuffer3NewEPNS_7IsolateESt10shared_ptrINS_12BackingStoreEE", // ArrayBuffer::New(isolate, shared_ptr<BackingStore>)
      "_ZN2v812BackingStoreD1Ev",                                              // BackingStore::~BackingStore()
  };
  for (const char *name : names)
    if (dlsym(RTLD_DEFAULT, name) == nullptr) return 0;
  return 1;
}

extern "C" napi_value npyts_large_external_arraybuffer(void *data, size_t length, void (*release)(void *hint), void *hint) {
  v8::Isolate *isolate = v8::Isolate::GetCurrent();
  Release *r = new Release{release, hint};
  std::unique_ptr<v8::BackingStore> store = v8::ArrayBuffer::NewBackingStore(data, length, Deleter, r);
  v8::Local<v8::ArrayBuffer> buffer = v8::ArrayBuffer::New(isolate, std::move(store));
  return reinterpret_cast<napi_value>(*buffer);
}

// A map handed out as an ArrayBuffer that V8 does not count as memory of the heap's own: V8 counts an
// external backing store's bytes against its heap's external memory, and a 5 GB map then forces a
// full garbage collection at every open ("external memory pressure"), although its pages are the
// page cache's. A backing store made with V8's EmptyDeleter is not counted (V8 frees nothing for
// it); the map is removed instead by a finalizer on the ArrayBuffer object (npyts_native.c), which
// runs once no view holds the object.
extern "C" int npyts_uncounted_supported(void) {
  static int known = -1;
  if (known < 0) known = npyts_large_external_supported() && dlsym(RTLD_DEFAULT, "_ZN2v812BackingStore12EmptyDeleterEPvmS1_") != nullptr;
  return known;
}

extern "C" napi_value npyts_uncounted_arraybuffer(void *data, size_t length) {
  v8::Isolate *isolate = v8::Isolate::GetCurrent();
  std::unique_ptr<v8::BackingStore> store = v8::ArrayBuffer::NewBackingStore(data, length, v8::BackingStore::EmptyDeleter, nullptr);
  v8::Local<v8::ArrayBuffer> buffer = v8::ArrayBuffer::New(isolate, std::move(store));
  return reinterpret_cast<napi_value>(*buffer);
}
