# fuzz.mk: builds every tests/fuzz/fuzz_*.c into a libFuzzer binary in $(OUT), straight
# from the module sources (no CMake); called by tests/fuzz/run.sh as make -f fuzz.mk.
TOP	?= $(CURDIR)
OUT	?= $(TOP)/build/fuzz
CC	:= clang
PKGS	:= libpq libcurl openssl jansson uuid
SAN	:= -fsanitize=address,undefined -fno-sanitize-recover=undefined
CFLAGS	:= -g -O1 -fno-omit-frame-pointer -std=c11 -D_GNU_SOURCE -Wall -Wno-unused-parameter \
	   -I$(TOP) -DFLEETD_SOURCE_DIR='"$(TOP)"' -DFLEETD_BINARY_DIR='"$(OUT)"' \
	   $(shell pkg-config --cflags $(PKGS)) $(SAN)
LIBS	:= $(shell pkg-config --libs $(PKGS)) -lpthread -lm

# Module archives, lowest last on the link line; a target pulls only what it uses.
MODULES	:= iam regions providers core
define module_rules
$(1)_SRC := $$(wildcard $(TOP)/$(1)/*.c)
$(1)_OBJ := $$(patsubst $(TOP)/%.c,$(OUT)/obj/%.o,$$($(1)_SRC))
$(OUT)/lib$(1).a: $$($(1)_OBJ)
	@rm -f $$@
	@ar rcs $$@ $$^
endef
$(foreach m,$(MODULES),$(eval $(call module_rules,$(m))))
ARCHIVES := $(foreach m,$(MODULES),$(OUT)/lib$(m).a)

TARGETS	:= $(patsubst $(TOP)/tests/fuzz/%.c,%,$(wildcard $(TOP)/tests/fuzz/fuzz_*.c))

# Router: api/router.c alone, its handler symbols stubbed (generated from api/handlers.h,
# so a new handler needs no edit here) and server.c's static unescape() extracted.
$(OUT)/gen/handler_stubs.c: $(TOP)/api/handlers.h
	@mkdir -p $(@D)
	@{ echo '#include "api/handlers.h"'; \
	   sed -n 's/^HANDLER(\(h_[A-Za-z0-9_]*\));.*/bool \1(struct request *rq, struct err *e) { (void)rq; (void)e; return false; }/p' $<; } > $@
$(OUT)/gen/unescape.c: $(TOP)/api/server.c
	@mkdir -p $(@D)
	@{ echo '#include <stdlib.h>'; echo 'struct MHD_Connection;'; \
	   awk '/^unescape\(/ { print "size_t"; on = 1 } on { print } on && /^}/ { exit }' $< \
	   | sed 's/^unescape(/fuzz_server_unescape(/'; } > $@
	@grep -q fuzz_server_unescape $@ || { echo "fuzz: unescape() not found in api/server.c" >&2; exit 1; }
EXTRA_fuzz_router := $(OUT)/obj/api/router.o $(OUT)/gen/handler_stubs.o $(OUT)/gen/unescape.o

all: $(addprefix $(OUT)/,$(TARGETS))

$(OUT)/obj/%.o: $(TOP)/%.c
	@mkdir -p $(@D)
	@echo "  CC    $*.c"
	@$(CC) $(CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(OUT)/gen/%.o: $(OUT)/gen/%.c
	@$(CC) $(CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

.SECONDEXPANSION:
$(OUT)/fuzz_%: $(OUT)/obj/tests/fuzz/fuzz_%.o $$(EXTRA_fuzz_$$*) $(ARCHIVES)
	@echo "  LINK  $(@F)"
	@$(CC) $(CFLAGS) -fsanitize=fuzzer $(filter %.o,$^) -Wl,--start-group $(ARCHIVES) -Wl,--end-group $(LIBS) -o $@

-include $(shell find $(OUT)/obj -name '*.d' 2>/dev/null)
.PHONY: all
