import csv,sys,re,collections
f=sys.argv[1]
rows=list(csv.reader(open(f)))
hdr=rows[1]; data=rows[2:]
H={h:i for i,h in enumerate(hdr)}
def num(r,k):
    v=r[H[k]].replace(',','')
    try: return float(v)
    except: return 0.0
tot=sum(num(r,"Warp Stall Sampling (All Samples)") for r in data)
segs=[]; cur=None
def new(addr):
    return {"start":addr,"n":0,"s":0,"ops":collections.Counter(),"first":None}
cur=new(data[0][H["Address"]])
for r in data:
    src=r[H["Source"]].strip()
    op=re.sub(r'^@!?U?P\w+\s+','',src).split(' ')[0].split('.')[0]
    n=num(r,"Instructions Executed"); s=num(r,"Warp Stall Sampling (All Samples)")
    cur["n"]+=n; cur["s"]+=s; cur["ops"][op]+=n
    if op=="BAR" or op=="BRA" and n>0 and False:
        segs.append(cur); cur=new(r[H["Address"]])
segs.append(cur)
print("segments",len(segs),"total samples",tot)
for i,sg in enumerate(segs):
    if sg["s"]/tot<0.01: continue
    print("%3d %s samp %5.1f%% instr %5.1f%%  %s"%(i,sg["start"],100*sg["s"]/tot,100*sg["n"]/sum(x["n"] for x in segs)," ".join("%s:%d"%(k,v/1e6) for k,v in sg["ops"].most_common(6))))
